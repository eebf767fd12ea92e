"""The room an untrusted program runs in, a concern of its own that the judge and `exe:` variants call
(as judges call ioi/isolate): bubblewrap's namespaces or the fallback's own users (room, bwrap_args,
fallback_users), resource limits and cgroups (process, cgroups), the system-call filter, the OOM killer's
order, the capped case disk, CUDA's sealed JIT cache, the reaper of every process a program started,
and the safe handling of what a program or a submission leaves behind (staging)."""
