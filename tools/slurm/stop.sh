#!/usr/bin/env bash
# Stop the single-node Slurm cluster that tools/slurm/start.sh started in SLURM_DIR
# (default /tmp/statelayers-slurm): only the processes named by its pid files, and only
# while they still are the daemon that file names, after cancelling the cluster's
# remaining jobs through scancel; and the /etc/slurm/slurm.conf link start.sh made.
# Leaves the directory (logs, config) in place; SLURM_DIR_REMOVE=1 also deletes it.
#
# The stopped cluster's slurm.conf moves to slurm.conf.stopped and slurm.conf becomes a
# stub without a controller: a shell that still has SLURM_CONF from env.sh gets an
# immediate error from sbatch, squeue or scontrol instead of 9 s of retries against the
# stopped slurmctld. That matters for every snakemake call with the Slurm executor
# plugin installed: the plugin runs `scontrol show config` when Snakemake loads it,
# local runs included (docs/slurm.md). start.sh writes slurm.conf anew.
set -uo pipefail

SLURM_DIR=${SLURM_DIR:-/tmp/statelayers-slurm}
log() { echo "slurm/stop: $*" >&2; }

stop_one() {  # stop_one NAME: TERM, wait up to 10 s, then KILL
    local name=$1 pidfile="$SLURM_DIR/run/$1.pid" pid comm
    [[ -s $pidfile ]] || return 0
    pid=$(<"$pidfile")
    if [[ ! $pid =~ ^[0-9]+$ ]] || ! kill -0 "$pid" 2>/dev/null; then
        rm -f "$pidfile"
        return 0
    fi
    comm=$(cat "/proc/$pid/comm" 2>/dev/null || true)
    if [[ $comm != "$name" ]]; then  # pid reused by something else: not ours
        log "pid $pid in $pidfile is '$comm', not $name; leaving it alone"
        rm -f "$pidfile"
        return 0
    fi
    kill -TERM "$pid" 2>/dev/null
    for _ in $(seq 100); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
        log "$name ($pid) ignored TERM; killing"
        kill -KILL "$pid" 2>/dev/null
    fi
    rm -f "$pidfile"
    log "stopped $name ($pid)"
}

# Jobs still queued or running in this cluster: cancel them through Slurm itself, so no
# job step outlives its slurmd.
if [[ -s $SLURM_DIR/slurm.conf && -s $SLURM_DIR/run/slurmctld.pid ]] \
    && kill -0 "$(<"$SLURM_DIR/run/slurmctld.pid")" 2>/dev/null; then
    export SLURM_CONF=$SLURM_DIR/slurm.conf
    jobs=$(squeue -h -t PENDING,RUNNING,SUSPENDED,COMPLETING -o %i 2>/dev/null | tr '\n' ' ')
    if [[ -n ${jobs// /} ]]; then
        log "cancelling jobs $jobs"
        # shellcheck disable=SC2086
        scancel $jobs 2>/dev/null
        for _ in $(seq 100); do
            [[ -z $(squeue -h -t RUNNING,COMPLETING -o %i 2>/dev/null) ]] && break
            sleep 0.2
        done
    fi
fi

# Compute node first, then the controller, then munge.
for name in slurmd slurmctld munged; do
    stop_one "$name"
done
# The /etc/slurm/slurm.conf link start.sh made, if it still points here.
if [[ -L /etc/slurm/slurm.conf && $(readlink /etc/slurm/slurm.conf) == "$SLURM_DIR/slurm.conf" ]]; then
    rm -f /etc/slurm/slurm.conf
fi
if [[ ${SLURM_DIR_REMOVE:-0} == 1 && -d $SLURM_DIR ]]; then
    rm -rf -- "$SLURM_DIR"
elif [[ -s $SLURM_DIR/slurm.conf ]] && head -n1 "$SLURM_DIR/slurm.conf" | grep -q "^# Written by tools/slurm/start.sh" \
    && ! [[ -s $SLURM_DIR/run/slurmctld.pid ]]; then
    mv -f "$SLURM_DIR/slurm.conf" "$SLURM_DIR/slurm.conf.stopped"
    cat >"$SLURM_DIR/slurm.conf" <<'EOF'
# This cluster is stopped (tools/slurm/stop.sh); its configuration is slurm.conf.stopped.
# No controller here on purpose: Slurm commands fail at once instead of retrying the
# stopped one. tools/slurm/start.sh writes a new slurm.conf.
EOF
fi
exit 0
