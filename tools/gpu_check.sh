#!/usr/bin/env bash
# The GPU check, one command on an NVIDIA Hopper GPU machine without network: builds the
# CUDA kernels of causal-conv1d and mamba-ssm from their upstream sources for sm_90 only
# (causal-conv1d's kernel files split into translation units that compile in parallel), checks that the compiled modules import and that transformers binds them, runs the CUDA
# tests (both Mamba backends give the same numbers, the Conv1D identity on the kernel
# path, the scans, and tests/test_cuda_smoke.py: training with validation, bf16 and a
# resume on CUDA, the study's Mamba-2 dimensions on both backends, an erasure and
# patching on the GPU), times a training step of every model alone (benchmarks/gpu_step.py,
# one process: Triton compiles the study's kernels here, into its cache), measures how
# many training processes share the GPU best (benchmarks/gpu_throughput.py, up to 16
# processes, which find those kernels in the cache), and plans the paper's run through
# the GPU cluster profile (a dry run of profiles/slurm-gpu, where snakemake is installed).
#
#   tools/gpu_prepare.sh DIR      # first, where pip works: fills .gpu/sources
#   tools/gpu_check.sh            # then on the GPU machine, in a copy of the repository
#   tools/gpu_check.sh --dry-run  # anywhere: no GPU, nvcc or compiler needed (see below)
#   tools/gpu_check.sh --cuda-skips JUNIT_XML  # the tests step's verdict on a pytest JUnit report
#
# No venv and no package index: the machine's own python3 (or $PYTHON) runs with src/ and
# the built packages on PYTHONPATH; nothing needs the network (HF_HUB_OFFLINE and
# TRANSFORMERS_OFFLINE are set). Logs go to $OUT (default .gpu/out), one per step, and
# $OUT/summary.txt has a line per step with its status and seconds. A failed step does
# not stop the later ones: without kernels the torch-backend tests and timings still run.
# Exit status 1 if a step failed; a benchmark fails when one of its rows failed, the tests
# step on the GPU machine also when a test was skipped for want of CUDA or the kernels: a skip
# whose reason begins with $CUDA_SKIP (tests/conftest.py's needs_cuda gives every such skip
# that prefix), not any skip that mentions CUDA.
#
# Time: each step has its own limit, and every limit is cut to what is left before the
# deadline (GPU_CHECK_DEADLINE, 525 s by default; with the 5 s a stopped command may take
# to die and the bookkeeping, the check ends within 9 minutes). A step that finds no time
# left fails at once. GPU_SOURCES and GPU_BUILD move .gpu/sources and .gpu/build, and
# TRITON_CACHE_DIR Triton's cache (default .gpu/triton); a build and a Triton cache kept
# from an earlier run on the same machine are reused (ninja recompiles nothing).
# GPU_CHECK_TESTS (space-separated test files) replaces the tests step's selection.
# GPU_CHECK_BUILD_LIMIT replaces the build step's limit, the least certain of the check's times
# (docs/cost.md, section GPU check).
#
# The jobs' kernel settings (statelayers.runtime.KERNEL_ENVIRONMENT: MAMBA_DETERMINISTIC=1)
# are exported here too, so that the test modules, which import transformers (and with it
# mamba-ssm) before statelayers, run the same kernels as the jobs and the benchmarks.
#
# --dry-run runs the same steps without nvidia-smi, nvcc or a build: it unpacks and patches
# the sources, prints the build commands, runs the kernel import check (step no-kernels:
# it must run through and find none), the same tests on CPU (their CUDA half skipped), a
# one-step CPU benchmark, the throughput benchmark at K = 1 and 2 on CPU (one block of
# each model) and the profile's dry run.
set -uo pipefail

cd "$(dirname "$0")/.."
ROOT=$PWD
PYTHON=${PYTHON:-python3}
OUT=${OUT:-$ROOT/.gpu/out}
SOURCES=${GPU_SOURCES:-$ROOT/.gpu/sources}
BUILD=${GPU_BUILD:-$ROOT/.gpu/build}
DRY_RUN=false
CUDA_SKIP=needs-cuda:  # tests/conftest.py's CUDA_SKIP

cuda_skips() {  # cuda_skips JUNIT_XML: list the tests skipped for want of CUDA or the kernels; exit 1 if any
    "$PYTHON" - "$1" "$CUDA_SKIP" <<'EOF'
import sys
import xml.etree.ElementTree as ET

report, prefix = sys.argv[1:]
skipped = [
    f"{case.get('classname')}::{case.get('name')}: {skip.get('message')}"
    for case in ET.parse(report).iter("testcase")
    for skip in case.findall("skipped")
    if (skip.get("message") or "").startswith(prefix)
]
print(f"{len(skipped)} test(s) skipped for want of CUDA or the kernels", *skipped, sep="\n  ")
sys.exit(1 if skipped else 0)
EOF
}

case ${1:-} in
    --dry-run) DRY_RUN=true ;;
    --cuda-skips)
        [[ $# -eq 2 ]] || { echo "usage: $0 --cuda-skips JUNIT_XML" >&2; exit 2; }
        cuda_skips "$2"
        exit ;;
    "") ;;
    *) echo "usage: $0 [--dry-run | --cuda-skips JUNIT_XML]" >&2; exit 2 ;;
esac

# The deadline and each step's limit, in seconds. The limits add up to more than the
# deadline: a step that ends early leaves its time to the later ones (the build's time is
# the least certain). docs/cost.md's GPU check section has the estimate for each step.
DEADLINE=${GPU_CHECK_DEADLINE:-525}
LIMIT_TOOL=5         # nvidia-smi, nvcc, ninja: each
LIMIT_PYTHON=15      # importing torch and transformers
LIMIT_SOURCES=5
LIMIT_BUILD=${GPU_CHECK_BUILD_LIMIT:-330}  # both packages at once
LIMIT_KERNELS=15
LIMIT_TESTS=150      # Triton compiles Mamba-2's kernels at the tests' sizes, fp32 and bf16
LIMIT_BENCHMARK=60   # ... and at the study's batch: one process fills Triton's cache
LIMIT_THROUGHPUT=90  # 16 processes start and load those kernels from it; 6 values of K x 4 s
LIMIT_PROFILE=30     # snakemake -n on config/paper.yaml
if $DRY_RUN; then    # the benchmarks on CPU, one step of each model: as slow as the CPU is loaded
    LIMIT_THROUGHPUT=120 LIMIT_BENCHMARK=120
fi
TESTS=(tests/test_backends.py tests/test_conv1d.py tests/test_mamba_scan.py tests/test_cuda_scan.py
    tests/test_cuda_smoke.py)
[[ -z ${GPU_CHECK_TESTS:-} ]] || read -ra TESTS <<<"$GPU_CHECK_TESTS"

mkdir -p "$OUT"
SUMMARY=$OUT/summary.txt
: >"$SUMMARY"
FAILED=0
START=$SECONDS
PATH=$PATH:/usr/local/cuda/bin  # where torch looks for nvcc after PATH, so this finds the same
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1  # no network here: fail, never wait for it
export TRITON_CACHE_DIR=${TRITON_CACHE_DIR:-$ROOT/.gpu/triton}
# The jobs' kernel settings, from the one place that defines them (names already set are kept).
while IFS='=' read -r name value; do
    [[ -n ${!name+set} ]] || export "$name=$value"
done < <(PYTHONPATH=$ROOT/src "$PYTHON" -c 'from statelayers.runtime import KERNEL_ENVIRONMENT as E
print("\n".join(f"{k}={v}" for k, v in E.items()))')

limited() {  # limited SECONDS COMMAND...: COMMAND, stopped after SECONDS or at the deadline (exit 124)
    local seconds=$1 left=$((DEADLINE - (SECONDS - START)))
    shift
    ((left >= seconds)) || seconds=$left
    if ((seconds <= 0)); then
        echo "no time left before the ${DEADLINE} s deadline: not run: $*" >&2
        return 124
    fi
    timeout --kill-after=5 "$seconds" "$@"
}

record() {  # record STEP STATUS SECONDS
    printf '%-22s %-30s %4d s\n' "$1" "$2" "$3" | tee -a "$SUMMARY"
    [[ $2 != FAILED* ]] || FAILED=$((FAILED + 1))
}

failure() {  # failure STATUS: how a command with that exit status ended
    ((${1} == 124 || ${1} == 137)) && echo "timed out" || echo "exit $1"
}

step() {  # step NAME COMMAND...: run COMMAND with its output in $OUT/NAME.log, record it
    local name=$1 start=$SECONDS status
    shift
    "$@" >"$OUT/$name.log" 2>&1
    status=$?
    if ((status == 0)); then
        record "$name" ok $((SECONDS - start))
        return 0
    fi
    record "$name" "FAILED ($(failure $status))" $((SECONDS - start))
    tail -n 25 "$OUT/$name.log" | sed 's/^/    /'
    return 1
}

machine() {  # the GPU, nvcc, ninja, and the preinstalled torch and transformers
    if ! $DRY_RUN; then
        limited "$LIMIT_TOOL" nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv || return
        limited "$LIMIT_TOOL" nvcc --version || return
        printf 'ninja ' && limited "$LIMIT_TOOL" ninja --version || return
    fi
    echo "cores: $(nproc); commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
    limited "$LIMIT_PYTHON" "$PYTHON" -c 'import sys, torch, transformers, torch.utils.cpp_extension as cpp
print("python", sys.version.split()[0], "torch", torch.__version__, "CUDA", torch.version.cuda,
      "transformers", transformers.__version__, "GPU", torch.cuda.is_available(), "CUDA_HOME", cpp.CUDA_HOME)'
}

build() {  # build DIR: setup.py build_ext --inplace in DIR (printed only, in a dry run)
    local command=(limited "$LIMIT_BUILD" "$PYTHON" setup.py build_ext --inplace)
    if $DRY_RUN; then
        echo "would run in $1: MAX_JOBS=$(nproc) timeout --kill-after=5 ${command[*]:1}"
        return 0
    fi
    (cd "$1" && MAX_JOBS=$(nproc) "${command[@]}")
}

no_kernels() {  # dry run: the import check runs to its end and finds no kernel (a timeout stays one)
    local status
    limited "$LIMIT_KERNELS" "$PYTHON" tools/gpu_kernels.py
    status=$?
    case $status in
        3) return 0 ;;
        0) return 1 ;;
        *) return "$status" ;;
    esac
}

step machine machine

# A copy of each upstream source with its setup.py patched for sm_90 and its dominating files
# split (tools/gpu_sources.py), and einops.
PACKAGES=()
if step sources limited "$LIMIT_SOURCES" "$PYTHON" tools/gpu_sources.py unpack "$SOURCES" "$BUILD"; then
    while read -r line; do [[ -f $line/setup.py ]] && PACKAGES+=("$line"); done <"$OUT/sources.log"
else
    record build "FAILED (no sources)" 0
fi

# Both builds at once (10 + 21 translation units on 16 cores), each under the build limit; each
# writes its exit status and seconds to $OUT/build-NAME.status.
start=$SECONDS
for dir in "${PACKAGES[@]}"; do
    name=build-$(basename "$dir")
    { build "$dir" >"$OUT/$name.log" 2>&1; echo "$? $((SECONDS - start))" >"$OUT/$name.status"; } &
done
wait
for dir in "${PACKAGES[@]}"; do
    name=build-$(basename "$dir")
    read -r status seconds <"$OUT/$name.status" || { status=1 seconds=$((SECONDS - start)); }
    if ((status != 0)); then
        record "$name" "FAILED ($(failure "$status"))" "$seconds"
        tail -n 25 "$OUT/$name.log" | sed 's/^/    /'
    elif $DRY_RUN; then
        record "$name" "dry run: not built" "$seconds"
    else
        record "$name" ok "$seconds"
    fi
done

path=$ROOT/src
for dir in "${PACKAGES[@]}"; do path+=:$dir; done
((${#PACKAGES[@]} == 0)) || path+=:$BUILD/site
export PYTHONPATH=$path${PYTHONPATH:+:$PYTHONPATH}

# The compiled modules import, and transformers binds them (it falls back silently).
if $DRY_RUN; then
    step no-kernels no_kernels
else
    step kernels limited "$LIMIT_KERNELS" "$PYTHON" tools/gpu_kernels.py
fi

tests() {  # the CUDA tests, next to the torch backend's (they skip where the kernels did not load)
    # -o addopts=: one process; the GPU machine has no pytest-xdist for pyproject's "-n 2".
    limited "$LIMIT_TESTS" "$PYTHON" -m pytest -o addopts= -v -rs -p no:cacheprovider --junitxml="$OUT/tests.xml" \
        "${TESTS[@]}" || return
    $DRY_RUN || cuda_skips "$OUT/tests.xml"
}

profile() {  # the paper's run planned through the GPU cluster profile (layered on profiles/slurm
    # where the Slurm executor plugin is installed, as docs/slurm.md runs it). Planned as on a
    # submitting host that can fetch the pretrained models: a dry run fetches nothing, but the
    # workflow refuses hub ids it has no copy of under HF_HUB_OFFLINE.
    local layers=()
    ! "$PYTHON" -c 'import snakemake_executor_plugin_slurm' 2>/dev/null || layers=(--profile profiles/slurm)
    limited "$LIMIT_PROFILE" env -u HF_HUB_OFFLINE -u TRANSFORMERS_OFFLINE "$PYTHON" -m snakemake -n \
        --nolock "${layers[@]}" --workflow-profile profiles/slurm-gpu --configfile config/paper.yaml
}

step tests tests

# A training step of every model alone under both Mamba backends, and the paper's scale from it;
# in one process, before the throughput benchmark, so that Triton compiles the study's kernels once.
if $DRY_RUN; then
    step benchmark limited "$LIMIT_BENCHMARK" "$PYTHON" benchmarks/gpu_step.py --device cpu --steps 1 \
        --warmup 0 --csv "$OUT/gpu_step.csv"
else
    step benchmark limited "$LIMIT_BENCHMARK" "$PYTHON" benchmarks/gpu_step.py --steps 20 \
        --csv "$OUT/gpu_step.csv"
fi

# K training processes at once on the GPU, K = 1 to 16: the best K and the paper's hours at it.
if $DRY_RUN; then
    step throughput limited "$LIMIT_THROUGHPUT" "$PYTHON" benchmarks/gpu_throughput.py --device cpu \
        --ks 1 2 --seconds 0 --block 1 --warmup 0 --csv "$OUT/gpu_throughput.csv"
else
    step throughput limited "$LIMIT_THROUGHPUT" "$PYTHON" benchmarks/gpu_throughput.py --seconds 4 \
        --csv "$OUT/gpu_throughput.csv"
fi

# The GPU profile's dry run: snakemake is not on the GPU machine, and the profile may not exist yet.
if [[ ! -d profiles/slurm-gpu ]]; then
    record profile "skipped: no profiles/slurm-gpu" 0
elif ! "$PYTHON" -c 'import snakemake' >/dev/null 2>&1; then
    record profile "skipped: no snakemake" 0
else
    step profile profile
fi

record total "$FAILED step(s) failed" $((SECONDS - START))
echo "logs in $OUT"
((FAILED == 0))
