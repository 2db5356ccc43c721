#!/usr/bin/env bash
# The GPU check, one command on an NVIDIA Hopper GPU machine without network: builds the
# CUDA kernels of causal-conv1d and mamba-ssm from their upstream sources for sm_90 only,
# checks that the compiled modules import and that transformers binds them, runs the CUDA
# tests (both Mamba backends give the same numbers, the Conv1D identity on the kernel
# path, the scans), measures how many training processes share the GPU best
# (benchmarks/gpu_throughput.py) and times a training step of every model alone.
#
#   tools/gpu_prepare.sh DIR      # first, where pip works: fills .gpu/sources
#   tools/gpu_check.sh            # then on the GPU machine, in a copy of the repository
#   tools/gpu_check.sh --dry-run  # anywhere: no GPU, nvcc or compiler needed (see below)
#
# No venv and no package index: the machine's own python3 (or $PYTHON) runs with src/ and
# the built packages on PYTHONPATH. Logs go to $OUT (default .gpu/out), one per step, and
# $OUT/summary.txt has a line per step with its status and seconds. A failed step does not
# stop the later ones: without kernels the torch-backend tests and timings still run. Exit
# status 1 if a step failed. Step limits add up to 540 s, so the check ends within 9 min.
# GPU_SOURCES and GPU_BUILD move .gpu/sources and .gpu/build; a build kept from an earlier
# run on the same machine is reused (ninja recompiles nothing).
#
# --dry-run runs the same steps without nvidia-smi, nvcc or a build: it unpacks and patches
# the sources, prints the build commands, runs the kernel import check (step no-kernels:
# it must run through and find none), the same tests on CPU (their CUDA half skipped), the
# throughput benchmark at K = 1 and 2 on CPU (one block of each model) and a one-step CPU
# benchmark.
set -uo pipefail

cd "$(dirname "$0")/.."
ROOT=$PWD
PYTHON=${PYTHON:-python3}
OUT=${OUT:-$ROOT/.gpu/out}
SOURCES=${GPU_SOURCES:-$ROOT/.gpu/sources}
BUILD=${GPU_BUILD:-$ROOT/.gpu/build}
DRY_RUN=false
case ${1:-} in
    --dry-run) DRY_RUN=true ;;
    "") ;;
    *) echo "usage: $0 [--dry-run]" >&2; exit 2 ;;
esac

# Time limits in seconds; they add up to 540 (9 min). docs/cost.md's GPU check section has
# the estimate for each step.
LIMIT_TOOL=5         # nvidia-smi, nvcc, ninja: each
LIMIT_PYTHON=15      # importing torch and transformers
LIMIT_SOURCES=5
LIMIT_BUILD=300      # both packages at once
LIMIT_KERNELS=15
LIMIT_TESTS=70       # Triton compiles Mamba-2's kernels on their first call
LIMIT_THROUGHPUT=90  # ... and again for batch 64; 16 processes start; 6 values of K x 4 s
LIMIT_BENCHMARK=30   # the same shapes: Triton's cache has them
if $DRY_RUN; then    # the benchmarks on CPU, one step of each model: as slow as the CPU is loaded
    LIMIT_THROUGHPUT=120 LIMIT_BENCHMARK=120
fi
TESTS=(tests/test_backends.py tests/test_conv1d.py tests/test_mamba_scan.py tests/test_cuda_scan.py)

mkdir -p "$OUT"
SUMMARY=$OUT/summary.txt
: >"$SUMMARY"
FAILED=0
START=$SECONDS
export MAMBA_DETERMINISTIC=1  # one Triton configuration per kernel, not hundreds to autotune
PATH=$PATH:/usr/local/cuda/bin  # where torch looks for nvcc after PATH, so this finds the same

limited() {  # limited SECONDS COMMAND...: COMMAND, stopped after SECONDS (exit 124)
    timeout --kill-after=5 "$@"
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

no_kernels() {  # dry run: the import check runs to its end and finds no kernel
    limited "$LIMIT_KERNELS" "$PYTHON" tools/gpu_kernels.py
    (($? == 3))
}

step machine machine

# A copy of each upstream source with its setup.py patched for sm_90, and einops.
PACKAGES=()
if step sources limited "$LIMIT_SOURCES" "$PYTHON" tools/gpu_sources.py unpack "$SOURCES" "$BUILD"; then
    while read -r line; do [[ -f $line/setup.py ]] && PACKAGES+=("$line"); done <"$OUT/sources.log"
else
    record build "FAILED (no sources)" 0
fi

# Both builds at once (10 + 4 compile jobs on 16 cores), each under the build limit; each
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

# The CUDA tests, next to the torch backend's (they skip where the kernels did not load).
step tests limited "$LIMIT_TESTS" "$PYTHON" -m pytest -v -rs -p no:cacheprovider \
    --junitxml="$OUT/tests.xml" "${TESTS[@]}"

# K training processes at once on the GPU, K = 1 to 16: the best K and the paper's hours at it.
if $DRY_RUN; then
    step throughput limited "$LIMIT_THROUGHPUT" "$PYTHON" benchmarks/gpu_throughput.py --device cpu \
        --ks 1 2 --seconds 0 --block 1 --warmup 0 --csv "$OUT/gpu_throughput.csv"
else
    step throughput limited "$LIMIT_THROUGHPUT" "$PYTHON" benchmarks/gpu_throughput.py --seconds 4 \
        --csv "$OUT/gpu_throughput.csv"
fi

# A training step of every model alone under both Mamba backends, and the paper's scale from it.
if $DRY_RUN; then
    step benchmark limited "$LIMIT_BENCHMARK" "$PYTHON" benchmarks/gpu_step.py --device cpu --steps 1 \
        --warmup 0 --csv "$OUT/gpu_step.csv"
else
    step benchmark limited "$LIMIT_BENCHMARK" "$PYTHON" benchmarks/gpu_step.py --steps 20 \
        --csv "$OUT/gpu_step.csv"
fi

record total "$FAILED step(s) failed" $((SECONDS - START))
echo "logs in $OUT"
((FAILED == 0))
