"""The system-call filter, tested by running a small C program under it (and under bwrap with it)."""

from __future__ import annotations

import shutil
import struct
import subprocess
import textwrap
from pathlib import Path

import pytest

from attnbench.sandbox import syscall_filter

pytestmark = pytest.mark.skipif(not syscall_filter.supported() or shutil.which("cc") is None,
                                reason="the filter is for Linux on x86-64 or aarch64, and the probe needs cc")

PROBE = textwrap.dedent(r"""
    #define _GNU_SOURCE
    #include <errno.h>
    #include <fcntl.h>
    #include <linux/falloc.h>
    #include <pthread.h>
    #include <signal.h>
    #include <sched.h>
    #include <stdio.h>
    #include <string.h>
    #include <sys/shm.h>
    #include <sys/stat.h>
    #include <sys/syscall.h>
    #include <sys/wait.h>
    #include <unistd.h>
    static void show(const char* name, long r) { printf("%s=%s\n", name, r < 0 ? strerror(errno) : "ok"); }
    static void* nothing(void* arg) { return arg; }
    int main(void) {
        show("keyctl", syscall(SYS_keyctl, 0 /* KEYCTL_GET_KEYRING_ID */, -3 /* session */, 0));
        show("add_key", syscall(SYS_add_key, "user", "probe", "x", 1, -3));
        show("request_key", syscall(SYS_request_key, "user", "probe", NULL, 0));
        cpu_set_t set; CPU_ZERO(&set); CPU_SET(0, &set);
        show("sched_setaffinity", sched_setaffinity(0, sizeof set, &set));
        show("io_uring_setup", syscall(425, 1, NULL));
    #ifdef __x86_64__
        show("x32_getpid", syscall(0x40000000 | 39));
    #endif
        int scratch = fileno(tmpfile());
        show("fallocate_plain", fallocate(scratch, 0, 0, 4096));
        show("fallocate_keep_size", fallocate(scratch, FALLOC_FL_KEEP_SIZE, 0, 1 << 20));
        show("fallocate_punch", fallocate(scratch, FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE, 0, 4096));
        struct statx x;
        show("statx", syscall(SYS_statx, AT_FDCWD, "/proc/self/exe", 0, STATX_BTIME, &x));
        x.stx_mask = 0;  /* glibc's statx falls back to stat where the call is missing: no birth time then */
        printf("btime=%s\n", statx(AT_FDCWD, "/proc/self/exe", 0, STATX_BTIME, &x) == 0 && (x.stx_mask & STATX_BTIME) ? "shown" : "none");
        struct stat plain;
        show("stat", stat("/proc/self/exe", &plain));
        show("memfd_create", syscall(SYS_memfd_create, "probe", 0));
        long segment = syscall(SYS_shmget, IPC_PRIVATE, 4096, IPC_CREAT | 0600);
        show("shmget", segment);
        if (segment >= 0) shmctl(segment, IPC_RMID, NULL);  /* leave none on the host */
        show("getpid", syscall(SYS_getpid));
        pid_t child = fork();
        if (child == 0) _exit(7);
        int status = 0; waitpid(child, &status, 0);
        printf("fork=%s\n", WIFEXITED(status) && WEXITSTATUS(status) == 7 ? "ok" : "bad");
        pthread_t thread;  /* glibc tries clone3 first, then clone */
        printf("thread=%s\n", pthread_create(&thread, NULL, nothing, NULL) == 0 && pthread_join(thread, NULL) == 0 ? "ok" : "bad");
        show("clone3", syscall(435, NULL, 0));  /* no arguments: EFAULT or EINVAL where it is let through */
        show("setns", setns(-1, 0));  /* no namespace: EBADF where it is let through */
        long user_child = syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0);
        if (user_child == 0) _exit(0);
        if (user_child > 0) waitpid(user_child, &status, 0);
        show("clone_newuser", user_child);
        show("unshare_user", unshare(CLONE_NEWUSER));  /* last: where it is let through, the probe is in it */
        return 0;
    }
""")


@pytest.fixture(scope="module")
def probe(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("probe")
    (folder / "probe.c").write_text(PROBE)
    subprocess.run(["cc", "-O1", "-o", str(folder / "probe"), str(folder / "probe.c")], check=True)
    return folder / "probe"


def _answers(argv: list[str], build: bool = False, fallback: bool = False) -> dict[str, str]:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60,
                          preexec_fn=syscall_filter.installer(build, fallback))
    assert done.returncode == 0, done.stderr
    return dict(line.split("=", 1) for line in done.stdout.splitlines())


def _expect_refused(answers: dict[str, str]) -> None:
    for name in ("keyctl", "add_key", "request_key", "sched_setaffinity", "io_uring_setup"):
        assert answers[name] == "Operation not permitted", (name, answers)
    if "x32_getpid" in answers:
        assert answers["x32_getpid"] == "Operation not permitted"
    for name in ("fallocate_keep_size", "fallocate_punch"):  # space past the size no limit counts
        assert answers[name] == "Operation not supported", (name, answers)
    assert answers["statx"] == "Function not implemented" and answers["btime"] == "none"  # no birth times
    assert answers["getpid"] == "ok" and answers["fork"] == "ok" and answers["fallocate_plain"] == "ok"
    assert answers["stat"] == "ok" and answers["thread"] == "ok"


def test_the_calls_that_carry_state_between_runs_are_refused_and_the_rest_work(probe: Path) -> None:
    answers = _answers([str(probe)])
    _expect_refused(answers)
    assert answers["memfd_create"] == answers["shmget"] == "ok"  # a run's: the CUDA driver makes a memfd as it starts


def test_a_build_is_refused_memory_files_too(probe: Path) -> None:
    """Red team 24: a build held 23 GiB of the host's memory in memfd pages, which no limit of a build sees and
    no process's RSS shows (the OOM killer would take an honest build beside it)."""
    answers = _answers([str(probe)], build=True)
    _expect_refused(answers)
    assert answers["memfd_create"] == answers["shmget"] == "Operation not permitted"


@pytest.mark.parametrize("build", [False, True], ids=["run", "build"])
def test_the_fallback_is_refused_namespaces_and_keeps_its_threads(probe: Path, build: bool) -> None:
    """Red team 26: in a user namespace of its own, a fallback program mounted a FUSE file system and asked it what
    its own server never answered; SIGKILL left it stuck in the kernel. The box's filter is on bubblewrap, which
    makes namespaces: only the fallback's refuses them."""
    answers = _answers([str(probe)], build=build, fallback=True)
    _expect_refused(answers)
    assert answers["unshare_user"] == answers["setns"] == answers["clone_newuser"] == "Operation not permitted"
    assert answers["clone3"] == "Function not implemented"  # its flags are behind a pointer: glibc falls back to clone
    box = _answers([str(probe)], build=build)
    assert box["setns"] == "Bad file descriptor" and box["clone3"] != "Function not implemented"


def test_without_the_filter_the_probe_reaches_them(probe: Path) -> None:
    # The control: the same probe unfiltered gets past the filter's answer on at least the affinity call,
    # so the test above can fail.
    done = subprocess.run([str(probe)], capture_output=True, text=True, timeout=60)
    answers = dict(line.split("=", 1) for line in done.stdout.splitlines())
    assert answers["sched_setaffinity"] == "ok" and answers["fallocate_keep_size"] == "ok" and answers["statx"] == "ok"
    assert answers["memfd_create"] == answers["shmget"] == "ok"


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")
def test_the_filter_holds_inside_bubblewrap(probe: Path) -> None:
    if subprocess.run(["bwrap", "--ro-bind", "/", "/", "true"], capture_output=True).returncode != 0:
        pytest.skip("bwrap cannot make namespaces here")
    _expect_refused(_answers(["bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
                              "--tmpfs", "/tmp", "--ro-bind", str(probe), "/tmp/probe", "--unshare-all", "--die-with-parent",
                              "--new-session", "/tmp/probe"]))


@pytest.mark.parametrize("build, fallback", [(False, False), (True, False), (False, True), (True, True)],
                         ids=["run", "build", "fallback run", "fallback build"])
def test_the_program_jumps_to_the_refusal_from_every_check(build: bool, fallback: bool) -> None:
    program = syscall_filter.filter_program("x86_64", build=build, fallback=fallback)
    assert len(program) % 8 == 0
    instructions = [program[i:i + 8] for i in range(0, len(program), 8)]
    last = len(instructions) - 1
    refused = (len(syscall_filter.REFUSED_CALLS) + (len(syscall_filter.NO_MEMORY_FILES) if build else 0)
               + (len(syscall_filter.NO_NAMESPACES) if fallback else 0))
    for at, raw in enumerate(instructions[6:6 + refused], start=6):
        code, jt, jf, _ = struct.unpack("=HBBI", raw)
        assert code == 0x15 and jf == 0 and at + 1 + jt == last
    at = 6 + refused
    if fallback:  # clone3 answered ENOSYS; clone with a new namespace's flag refused, without one allowed
        clone3, nosys, clone, flags, mask, none, allow, refuse = (struct.unpack("=HBBI", raw)
                                                                  for raw in instructions[at:at + 8])
        assert clone3 == (0x15, 0, 1, 435) and nosys == (0x06, 0, 0, 0x00050000 | 38)
        assert clone == (0x15, 0, 5, 56) and flags == (0x20, 0, 0, 16) and mask == (0x54, 0, 0, 0x7E020000)
        assert none == (0x15, 0, 1, 0) and allow[3] == 0x7FFF0000 and refuse[3] == 0x00050000 | 1
        at += 8
    # then statx, answered ENOSYS
    statx, nosys = (struct.unpack("=HBBI", raw) for raw in instructions[at:at + 2])
    assert statx == (0x15, 0, 1, 332) and nosys == (0x06, 0, 0, 0x00050000 | 38)
    # then fallocate: any other call to the ALLOW, its mode 0 to the ALLOW, any other mode to EOPNOTSUPP
    fallocate, load, mode, allow, unsupported = (struct.unpack("=HBBI", raw) for raw in instructions[-6:-1])
    assert fallocate == (0x15, 0, 2, 285) and load == (0x20, 0, 0, 24) and mode == (0x15, 0, 1, 0)
    assert allow[3] == 0x7FFF0000 and unsupported[3] == 0x00050000 | 95


def test_a_kernel_that_refuses_the_filter_is_said_once_not_a_failure_of_every_run(monkeypatch):
    monkeypatch.setattr(syscall_filter, "_TAKEN", None)

    def refused() -> None:
        raise OSError(22, "could not install the system-call filter")

    monkeypatch.setattr(syscall_filter, "install_in_this_process", refused)
    assert syscall_filter.supported() is False


def test_a_path_without_true_does_not_turn_the_filter_off(monkeypatch):
    """The probe ran `true` from PATH: a TA's PATH without it was read as "a kernel without seccomp", and
    every program ran unfiltered."""
    monkeypatch.setattr(syscall_filter, "_TAKEN", None)
    if not syscall_filter.supported():
        pytest.skip("no system-call filter on this machine")
    monkeypatch.setattr(syscall_filter, "_TAKEN", None)
    monkeypatch.setenv("PATH", "/nonexistent")
    assert syscall_filter.supported() is True


def test_an_environments_sitecustomize_does_not_decide_whether_the_filter_is_used(tmp_path, monkeypatch):
    """The probe runs this Python: a sitecustomize on PYTHONPATH that fails made it read as "no seccomp here"
    and dropped the filter from every run (red team 12)."""
    from attnbench.sandbox import syscall_filter

    if not syscall_filter.supported():
        pytest.skip("no system-call filter on this machine")
    (tmp_path / "sitecustomize.py").write_text("raise SystemExit(1)\n")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    monkeypatch.setattr(syscall_filter, "_TAKEN", None)
    assert syscall_filter.supported()
