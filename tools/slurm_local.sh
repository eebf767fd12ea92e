#!/usr/bin/env bash
# A one-node Slurm on this machine, to try `attnbench compare --executor slurm` on a laptop and to
# test it in CI. Needs Debian's (or Ubuntu's) slurm-wlm and munge packages, and root: slurmd runs as
# root, munged as munge.
#
#   sudo apt-get install -y slurm-wlm munge
#   eval "$(sudo tools/slurm_local.sh)"        # start; prints `export SLURM_CONF=...` on stdout
#   attnbench compare -v cpu -c odd --executor slurm
#   sudo tools/slurm_local.sh stop             # stops the daemons it started, by their PIDs
#
# Everything (slurm.conf, state, spool, logs, PIDs) lives in $SLURM_LOCAL_DIR
# (default: /tmp/attnbench-slurm); the system's /etc/slurm is not touched. The node's CPUs and
# memory come from `slurmd -C`, so the node is not drained. NVIDIA GPUs (/dev/nvidia0, ...) are
# offered as gres `gpu`. No accounting: `sacct` answers nothing, and attnbench follows its jobs
# through squeue (MinJobAge is raised so that finished jobs stay visible for an hour).
set -euo pipefail

DIR="${SLURM_LOCAL_DIR:-${TMPDIR:-/tmp}/attnbench-slurm}"
PORT="${SLURM_LOCAL_PORT:-6817}"  # slurmctld; slurmd takes the next port
PIDS="$DIR/pids"

say() { echo "slurm_local: $*" >&2; }
die() { say "$1"; exit "${2:-3}"; }

alive() { [[ -n "${1:-}" ]] && kill -0 "$1" 2>/dev/null; }

stop() {
    [[ -f "$PIDS" ]] || { say "nothing to stop (no $PIDS)"; return 0; }
    if [[ -f "$DIR/slurm.conf" ]] && command -v squeue >/dev/null; then  # jobs first, so none is left running
        SLURM_CONF="$DIR/slurm.conf" timeout 10 scancel --full --quiet --user "$(id -un)" 2>/dev/null || true
    fi
    local name pid
    while read -r name pid; do
        if alive "$pid"; then
            kill -TERM "$pid" 2>/dev/null || true
            for _ in $(seq 50); do alive "$pid" || break; sleep 0.1; done
            alive "$pid" && kill -KILL "$pid" 2>/dev/null || true
            say "stopped $name (pid $pid)"
        fi
    done < <(tac "$PIDS")  # slurmd before slurmctld, munged last
    rm -f "$PIDS"
}

pid_from() {  # a daemon's PID from its pid file, waiting up to 10 s for it to appear
    for _ in $(seq 100); do
        [[ -s "$1" ]] && { cat "$1"; return 0; }
        sleep 0.1
    done
    return 1
}

start_munge() {
    install -d -o munge -g munge -m 0755 /run/munge
    if [[ -s /run/munge/munged.pid ]] && alive "$(cat /run/munge/munged.pid)"; then
        say "munged already running (pid $(cat /run/munge/munged.pid)); using it, it will not be stopped"
        return 0
    fi
    if [[ ! -s /etc/munge/munge.key ]]; then
        if command -v mungekey >/dev/null; then mungekey --create --force >/dev/null
        else dd if=/dev/urandom of=/etc/munge/munge.key bs=1 count=1024 status=none; fi
        chown munge:munge /etc/munge/munge.key && chmod 0400 /etc/munge/munge.key
    fi
    rm -f /run/munge/munged.pid
    runuser -u munge -- /usr/sbin/munged
    echo "munged $(pid_from /run/munge/munged.pid)" >> "$PIDS"
}

write_conf() {
    local host node gres=""
    host="$(hostname -s)"
    # slurmd -C: NodeName=... CPUs=... Boards=... RealMemory=... (then an UpTime line)
    node="$(slurmd -C | head -n 1)"
    [[ "$node" == NodeName=* ]] || die "slurmd -C did not describe this node: $node"
    node="NodeName=$host ${node#NodeName=* }"
    local gpus=(/dev/nvidia[0-9]*)
    if [[ -e "${gpus[0]}" ]]; then
        gres=" Gres=gpu:${#gpus[@]}"
        printf 'Name=gpu File=%s\n' "${gpus[@]}" > "$DIR/gres.conf"
    fi
    cat > "$DIR/slurm.conf" <<EOF
# Written by tools/slurm_local.sh: a one-node cluster for trying and testing attnbench.
ClusterName=attnbench
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$PORT
SlurmdPort=$((PORT + 1))
SlurmUser=root
AuthType=auth/munge
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool
SlurmctldPidFile=$DIR/slurmctld.pid
SlurmdPidFile=$DIR/slurmd.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
MpiDefault=none
ReturnToService=2
MinJobAge=3600
${gres:+GresTypes=gpu}
$node NodeAddr=127.0.0.1$gres State=UNKNOWN
PartitionName=local Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
}

start() {
    [[ $EUID -eq 0 ]] || die "run it as root (sudo): slurmd runs as root and munged as munge"
    for tool in munged slurmctld slurmd sinfo sbatch squeue; do
        command -v "$tool" >/dev/null || die "$tool is missing: install slurm-wlm and munge (apt-get install -y slurm-wlm munge)"
    done
    if [[ -f "$PIDS" ]]; then
        if alive "$(awk '$1 == "slurmctld" {print $2}' "$PIDS")"; then
            say "already running (pids in $PIDS)"
            echo "export SLURM_CONF=$DIR/slurm.conf"
            return 0
        fi
        stop
    fi
    mkdir -p "$DIR/state" "$DIR/spool" "$DIR/log"
    : > "$PIDS"
    start_munge
    write_conf
    export SLURM_CONF="$DIR/slurm.conf"
    rm -f "$DIR/slurmctld.pid" "$DIR/slurmd.pid"
    slurmctld -c -f "$SLURM_CONF"
    echo "slurmctld $(pid_from "$DIR/slurmctld.pid")" >> "$PIDS"
    slurmd -f "$SLURM_CONF"
    echo "slurmd $(pid_from "$DIR/slurmd.pid")" >> "$PIDS"
    for _ in $(seq 150); do
        if [[ "$(sinfo -h -o %T 2>/dev/null)" == idle* ]]; then
            while read -r name pid; do say "$name pid $pid"; done < "$PIDS"
            say "one-node cluster up: partition local, config $SLURM_CONF; stop with: $0 stop"
            echo "export SLURM_CONF=$SLURM_CONF"
            return 0
        fi
        sleep 0.2
    done
    say "the node did not reach idle in 30 s: $(sinfo -h -o '%T %E' 2>&1 || true)"
    tail -n 5 "$DIR/log/slurmctld.log" "$DIR/log/slurmd.log" >&2 || true
    stop
    exit 3
}

case "${1:-start}" in
    start) start ;;
    stop) stop ;;
    *) die "usage: $0 [start|stop]" 2 ;;
esac
