#!/usr/bin/env bash
# Start a real single-node Slurm cluster on this machine, for tests and for trying
# profiles/slurm without a site cluster. Needs root (slurmd launches the jobs).
#
#   tools/slurm/start.sh            # start (or find running) and wait until the node is idle
#   source "$SLURM_DIR/env.sh"      # SLURM_CONF for sbatch, squeue, sinfo, snakemake
#   tools/slurm/stop.sh             # stop exactly the daemons started here
#
# Everything lives under SLURM_DIR (default /tmp/statelayers-slurm): slurm.conf, the
# munge key and socket, state, spool, logs and one pid file per daemon. Outside it,
# only the link /etc/slurm/slurm.conf -> SLURM_DIR/slurm.conf (srun inside jobs does
# not see SLURM_CONF; see below); stop.sh removes it. Start one cluster at a time.
#
# Daemons: munged, slurmctld and slurmd run as plain daemons (no systemd). No slurmdbd:
# job status comes from squeue, which keeps finished jobs for MinJobAge seconds, so
# MinJobAge=600 is well above 3 x the plugin's init-seconds-before-status-checks
# (see docs/slurm.md for why squeue rather than slurmdbd + MariaDB).
#
# GPUs without GPUs: the node offers SLURM_FAKE_GPUS generic `gpu` resources (default
# 2), each cut into SLURM_FAKE_SHARDS `shard`s (default 4: Slurm's GPU sharing), and a
# partition `gpu` besides the default `debug` (the same node). So `sbatch --gpus=1` and
# `sbatch --gres=shard:1` are scheduled and allocated by Slurm itself: `scontrol show
# job -d` shows JOB_GRES=gpu:1 and, while the job runs, GRES=gpu:1(IDX:0). There is no
# device behind them (see below); the jobs run on CPU. SLURM_FAKE_GPUS=0 turns them off.
# Without slurmdbd, Slurm 22.05 refuses to count gres/gpu in a job's TRES
# (AccountingStorageTRES=gres/gpu is fatal), so TRES= shows cpu, mem and node only.
#
# Environment: SLURM_DIR, SLURMCTLD_PORT (6817), SLURMD_PORT (6818),
# SLURM_START_TIMEOUT (seconds to wait for the node, 60), SLURM_NO_INSTALL=1 to
# never call apt-get, SLURM_FAKE_GPUS (2), SLURM_FAKE_SHARDS (4 per GPU).
set -euo pipefail

SLURM_DIR=${SLURM_DIR:-/tmp/statelayers-slurm}
SLURMCTLD_PORT=${SLURMCTLD_PORT:-6817}
SLURMD_PORT=${SLURMD_PORT:-6818}
TIMEOUT=${SLURM_START_TIMEOUT:-60}
FAKE_GPUS=${SLURM_FAKE_GPUS:-2}
FAKE_SHARDS=${SLURM_FAKE_SHARDS:-4}

log() { echo "slurm/start: $*" >&2; }
die() { log "error: $*"; exit 1; }

alive() {  # alive NAME: the daemon recorded in NAME.pid is running
    local pidfile="$SLURM_DIR/run/$1.pid" pid
    [[ -s $pidfile ]] || return 1
    pid=$(<"$pidfile")
    [[ $pid =~ ^[0-9]+$ ]] && kill -0 "$pid" 2>/dev/null
}

node_state() {
    SLURM_CONF="$SLURM_DIR/slurm.conf" sinfo -h -N -n "$NODE" -o %t 2>/dev/null | head -n1 || true
}

wait_idle() {
    local state="" deadline=$((SECONDS + TIMEOUT))
    while ((SECONDS < deadline)); do
        state=$(node_state)
        case $state in
            idle | mix | alloc) return 0 ;;
        esac
        sleep 0.5
    done
    log "node $NODE not idle after ${TIMEOUT}s (state: '${state:-none}'); logs in $SLURM_DIR/log"
    tail -n 20 "$SLURM_DIR"/log/*.log >&2 || true
    return 1
}

[[ $(id -u) == 0 ]] || die "must run as root (slurmd starts jobs as their users)"

# 1. Packages (Debian 12: Slurm 22.05, munge 0.5.15), installed only if missing.
missing=()
for cmd in munged slurmctld slurmd sbatch; do
    command -v "$cmd" >/dev/null || missing+=("$cmd")
done
if ((${#missing[@]})); then
    [[ ${SLURM_NO_INSTALL:-0} != 1 ]] || die "missing ${missing[*]} and SLURM_NO_INSTALL=1"
    log "installing slurmctld slurmd slurm-client munge (missing: ${missing[*]})"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null
    apt-get install -y -qq slurmctld slurmd slurm-client munge >/dev/null
fi

NODE_LINE=$(slurmd -C | head -n1)  # NodeName=vm CPUs=2 Boards=1 ... RealMemory=24105
[[ $NODE_LINE == NodeName=* ]] || die "unexpected 'slurmd -C' output: $NODE_LINE"
NODE=${NODE_LINE%% *}
NODE=${NODE#NodeName=}

# 2. Already up? Then only wait for the node.
if alive munged && alive slurmctld && alive slurmd; then
    log "already running in $SLURM_DIR"
    wait_idle
    echo "export SLURM_CONF=$SLURM_DIR/slurm.conf"
    exit 0
fi
# Partly up (e.g. a crashed daemon): stop what this directory started, start afresh.
if [[ -d $SLURM_DIR/run ]]; then
    SLURM_DIR=$SLURM_DIR "$(dirname "$0")/stop.sh" || true
fi

# Inside a job, snakemake-executor-plugin-slurm-jobstep clears every SLURM_* variable
# (SLURM_CONF too) before it runs `srun`, so srun must find the configuration where
# every Slurm installation has it. /etc/slurm/slurm.conf becomes a link to ours unless
# it is a real file (a real Slurm here: refuse) or links to another live cluster.
ETC_CONF=/etc/slurm/slurm.conf
if [[ -L $ETC_CONF ]]; then
    other=$(readlink "$ETC_CONF")
    other_dir=$(dirname "$other")
    if [[ $other != "$SLURM_DIR/slurm.conf" && -s $other_dir/run/slurmctld.pid ]] \
        && kill -0 "$(<"$other_dir/run/slurmctld.pid")" 2>/dev/null; then
        die "$ETC_CONF links to the running cluster in $other_dir: stop it first (SLURM_DIR=$other_dir tools/slurm/stop.sh)"
    fi
elif [[ -e $ETC_CONF ]]; then
    die "$ETC_CONF exists and is not ours: this machine has its own Slurm configuration"
fi

# 3. Configuration.
mkdir -p "$SLURM_DIR"/{run,log,state,spool,munge}
chmod 0755 "$SLURM_DIR" "$SLURM_DIR"/{run,log,state,spool,munge}
if [[ ! -s $SLURM_DIR/munge/munge.key ]]; then
    dd if=/dev/urandom of="$SLURM_DIR/munge/munge.key" bs=1024 count=1 status=none
fi
chmod 0600 "$SLURM_DIR/munge/munge.key"
SOCKET=$SLURM_DIR/munge/munge.socket.2

# Fake GPUs: generic resources that Slurm schedules, allocates and records like GPUs.
# gres.conf (slurmd reads it next to slurm.conf) gives each GPU a device file,
# SLURM_DIR/dev/nvidiaN: a gpu GRES without File= is dropped by Slurm's gpu plugin (the
# node reports 0 GPUs and is set INVAL), and shards must name the GPU they share. The
# files are character devices with the numbers of /dev/null (1, 3), as slurmd wants a
# device there; nothing opens them (no CUDA), and with task/none no cgroup guards them.
# Named nvidiaN, they make Slurm set CUDA_VISIBLE_DEVICES in each job as on a real node
# (torch finds no driver and stays on CPU). Where mknod is not allowed, plain files
# work too: slurmd logs an error and sets no CUDA_VISIBLE_DEVICES.
[[ $FAKE_GPUS =~ ^[0-9]+$ && $FAKE_SHARDS =~ ^[0-9]+$ ]] \
    || die "SLURM_FAKE_GPUS and SLURM_FAKE_SHARDS must be whole numbers"
GRES_CONF="" NODE_GRES=""
echo "# Written by tools/slurm/start.sh: fake GPUs (see there)." >"$SLURM_DIR/gres.conf"
if ((FAKE_GPUS > 0)); then
    rm -rf "$SLURM_DIR/dev"
    mkdir -p "$SLURM_DIR/dev"
    for ((i = 0; i < FAKE_GPUS; i++)); do
        mknod "$SLURM_DIR/dev/nvidia$i" c 1 3 2>/dev/null || : >"$SLURM_DIR/dev/nvidia$i"
        echo "NodeName=$NODE Name=gpu File=$SLURM_DIR/dev/nvidia$i" >>"$SLURM_DIR/gres.conf"
    done
    GRES_CONF="GresTypes=gpu"
    NODE_GRES=" Gres=gpu:$FAKE_GPUS"
    if ((FAKE_SHARDS > 0)); then
        for ((i = 0; i < FAKE_GPUS; i++)); do
            echo "NodeName=$NODE Name=shard Count=$FAKE_SHARDS File=$SLURM_DIR/dev/nvidia$i" \
                >>"$SLURM_DIR/gres.conf"
        done
        GRES_CONF="GresTypes=gpu,shard"
        NODE_GRES+=",shard:$((FAKE_GPUS * FAKE_SHARDS))"
    fi
fi

cat >"$SLURM_DIR/slurm.conf" <<EOF
# Written by tools/slurm/start.sh; regenerated on every start.
ClusterName=statelayers
SlurmctldHost=$NODE(127.0.0.1)
SlurmctldPort=$SLURMCTLD_PORT
SlurmdPort=$SLURMD_PORT
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$SOCKET
StateSaveLocation=$SLURM_DIR/state
SlurmdSpoolDir=$SLURM_DIR/spool
SlurmctldPidFile=$SLURM_DIR/run/slurmctld.pid
SlurmdPidFile=$SLURM_DIR/run/slurmd.pid
SlurmctldLogFile=$SLURM_DIR/log/slurmctld.log
SlurmdLogFile=$SLURM_DIR/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
# No cgroups: works in containers and without systemd.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SwitchType=switch/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
# Finished jobs stay visible to squeue for 10 minutes: the plugin's squeue status
# checks need MinJobAge >= 3 x init-seconds-before-status-checks.
MinJobAge=600
ReturnToService=2
SlurmdTimeout=60
InactiveLimit=0
KillWait=10
$GRES_CONF
$NODE_LINE$NODE_GRES NodeAddr=127.0.0.1 State=UNKNOWN
PartitionName=debug Nodes=$NODE Default=YES MaxTime=INFINITE State=UP
EOF
if ((FAKE_GPUS > 0)); then  # the same node as a GPU partition, as sites name theirs
    echo "PartitionName=gpu Nodes=$NODE MaxTime=INFINITE State=UP" >>"$SLURM_DIR/slurm.conf"
fi
echo "export SLURM_CONF=$SLURM_DIR/slurm.conf" >"$SLURM_DIR/env.sh"
export SLURM_CONF=$SLURM_DIR/slurm.conf

mkdir -p /etc/slurm
ln -sfn "$SLURM_CONF" "$ETC_CONF"

# 4. Daemons. Each forks and writes its own pid file; -c: start with no old jobs.
munged --socket="$SOCKET" --key-file="$SLURM_DIR/munge/munge.key" \
    --pid-file="$SLURM_DIR/run/munged.pid" --log-file="$SLURM_DIR/log/munged.log" \
    --seed-file="$SLURM_DIR/munge/munged.seed" \
    || die "munged failed; see $SLURM_DIR/log/munged.log"
for _ in $(seq 50); do [[ -S $SOCKET ]] && break; sleep 0.1; done
munge -n -S "$SOCKET" | unmunge -S "$SOCKET" >/dev/null || die "munge does not work"

slurmctld -c -f "$SLURM_CONF" || die "slurmctld failed; see $SLURM_DIR/log/slurmctld.log"
for _ in $(seq 100); do scontrol ping 2>/dev/null | grep -q UP && break; sleep 0.2; done
slurmd -f "$SLURM_CONF" || die "slurmd failed; see $SLURM_DIR/log/slurmd.log"
for name in munged slurmctld slurmd; do
    for _ in $(seq 50); do alive "$name" && break; sleep 0.1; done
    alive "$name" || die "$name did not stay up; see $SLURM_DIR/log/$name.log"
done

wait_idle
log "node $NODE idle: $(sinfo -h -N -n "$NODE" -o '%c CPUs, %m MB, gres %G, partition %P' | paste -sd' ')"
echo "export SLURM_CONF=$SLURM_CONF"
