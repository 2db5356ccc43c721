"""Process set-up shared by the workflow's entry scripts: logging, CPU threads, the
memory allocator, the environment of the CUDA kernels, and the GPU of a model job."""

from __future__ import annotations

import atexit
import ctypes
import gc
import logging
import os
import sys

from statelayers import devices

KERNEL_ENVIRONMENT = {"MAMBA_DETERMINISTIC": "1"}
"""The settings every process runs mamba-ssm's kernels under: the workflow's jobs (through
:func:`start`), the tests and the benchmarks (through :mod:`statelayers.models.backends`,
which applies them before transformers imports mamba-ssm), so that tools/gpu_check.sh
measures the kernels the jobs run.

``MAMBA_DETERMINISTIC=1`` makes Mamba-2's Triton kernels (``mamba_ssm.ops.triton``) keep
one configuration each instead of autotuning (hundreds compile on the first call of each
shape otherwise, and each process picks its own by timing, so two processes could run
different kernels) and sum most of their backward partial results in a fixed order
instead of with atomics. mamba-ssm reads it when its Triton modules are imported (the
configurations) and at every call (the reductions), so it must be set before the first
import. What it
does not cover: Mamba-1's selective-scan backward (CUDA, ``selective_scan_cuda``) and
causal-conv1d's accumulate weight gradients with atomics, and cuBLAS, cuDNN (LSTM, GRU)
and attention kernels may change their summation order from run to run.

So on a GPU a resumed run (:mod:`statelayers.training`) continues from the saved weights,
optimizer, schedule and stream of training sequences, and sees the same batches as an
uninterrupted run, but its weights agree with that run's only to float rounding, as two
uninterrupted runs on a GPU agree with each other; bit-identical resumption is a CPU
guarantee. Set ``MAMBA_DETERMINISTIC=0`` in the environment to let mamba-ssm autotune
(what is already set is kept).
"""


def kernel_environment() -> None:
    """Apply :data:`KERNEL_ENVIRONMENT` where the environment does not set those names yet,
    and warn if mamba-ssm was imported before (its Triton kernels then keep the settings
    they were imported under)."""
    missing = {name: value for name, value in KERNEL_ENVIRONMENT.items() if name not in os.environ}
    os.environ.update(missing)
    if missing and "mamba_ssm" in sys.modules:
        logging.getLogger(__name__).warning(
            "mamba_ssm was imported before %s was set: its Triton kernels autotune", ", ".join(missing)
        )


HEAP_ALLOCATION_LIMIT = 32 << 20
"""Bytes up to which glibc's malloc serves an allocation from its heap (its largest
``M_MMAP_THRESHOLD``); :func:`keep_freed_memory` sets it."""


def keep_freed_memory() -> bool:
    """Let glibc's malloc serve allocations of up to :data:`HEAP_ALLOCATION_LIMIT` from its
    heap and keep what is freed there, instead of mapping fresh pages for each one and
    returning them to the system on ``free``; return whether it took (glibc only).

    A training step allocates and frees the same tensors of a few MB every step
    (activations, gradients, the input projection's output); glibc maps each of those
    above its threshold (128 KiB at start, raised only as large blocks are freed) afresh,
    and the first touch of every 4 KiB page is a page fault. One thread, batch 32,
    length 40: the LSTM's step 26.7 against 28.8 ms, Mamba's 133.6 against 139.5 ms,
    Mamba-2's on parity 123.7 against 129.8 ms. The process keeps its peak heap
    (``M_TRIM_THRESHOLD`` 1 GiB) and allocations above the limit are still mapped and
    returned."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # glibc's malloc.h
    return bool(mallopt(M_MMAP_THRESHOLD, HEAP_ALLOCATION_LIMIT)) and bool(mallopt(M_TRIM_THRESHOLD, 1 << 30))


def skip_final_collection() -> None:
    """At exit, move every object to the garbage collector's permanent generation
    (``gc.freeze``), so the interpreter's last collection does not walk them.

    A job that imports torch and transformers' models holds about 370 000 objects, and
    walking them took 0.95 s of the exit of such a process against 0.14 s frozen, for
    every one of the run's model jobs. What it gives up: objects in reference cycles are
    not finalised at exit. The jobs do not rely on that: their outputs are written and
    closed before the script ends (:mod:`statelayers.files`), and logging flushes its
    handlers in its own exit handler, which runs after this one."""
    atexit.register(gc.freeze)


def start(log_path: str | None = None, threads: int | None = None) -> logging.Logger:
    """Log to ``log_path`` (Snakemake's per-job log) and stderr, uncaught errors included;
    pin torch and the numba kernels to ``threads``; set :data:`KERNEL_ENVIRONMENT`; give a
    job that takes the ``gpu`` resource a GPU of its own where the host has several
    (:mod:`statelayers.devices`); keep freed memory in the heap (:func:`keep_freed_memory`);
    skip the garbage collection at exit (:func:`skip_final_collection`).

    Snakemake exports OMP/MKL thread counts from the rule's ``threads``, but torch's
    intra-op pool is sized at import, so it is set here explicitly. numba sizes its pool
    from ``NUMBA_NUM_THREADS`` (default: every core) when it is imported, which the
    kernels do at their first call, after this: a one-thread job whose numba pool holds
    a second, idle thread ran Mamba-2 training steps 3.8 x slower beside another job.
    """
    handlers: list[logging.Handler] = [logging.StreamHandler(sys.stderr)]
    if log_path:
        handlers.append(logging.FileHandler(log_path, mode="w"))
    logging.basicConfig(
        level=logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        handlers=handlers,
        force=True,
    )
    logging.captureWarnings(True)
    log = logging.getLogger("statelayers")

    def log_uncaught(kind, error, traceback):
        # Through both handlers: the job's log gets the error too, not only stderr.
        log.critical("%s: %s", kind.__name__, error, exc_info=(kind, error, traceback))

    sys.excepthook = log_uncaught
    kernel_environment()
    if devices.job_gpus() and (gpu := devices.choose_gpu()) is not None:
        log.info("GPU %s of this host: %s=%s", gpu, devices.VISIBLE, gpu)
    keep_freed_memory()
    skip_final_collection()
    if threads:
        import torch

        torch.set_num_threads(threads)
        os.environ["NUMBA_NUM_THREADS"] = str(threads)
    return log


def resolve_device(device: str):
    """``auto`` means CUDA when present; asking for CUDA without it is an error."""
    import torch

    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("device 'cuda' requested but torch sees no CUDA GPU; use 'cpu' or 'auto'")
    return torch.device(device)


def run_key(wildcards) -> dict:
    """The (arch, task, seed) of a per-run job, as table columns."""
    return {"arch": wildcards.arch, "task": wildcards.task, "seed": int(wildcards.seed)}


def length_inputs(inputs) -> dict[int, str]:
    """Inputs named ``L<length>`` (per-length data files), keyed by length."""
    return {int(name[1:]): path for name, path in inputs.items() if name[:1] == "L" and name[1:].isdigit()}
