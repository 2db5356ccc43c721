"""Process set-up shared by the workflow's entry scripts: logging and CPU threads."""

from __future__ import annotations

import logging
import os
import sys


def start(log_path: str | None = None, threads: int | None = None) -> logging.Logger:
    """Log to ``log_path`` (Snakemake's per-job log) and stderr, uncaught errors included;
    pin torch and the numba kernels to ``threads``.

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
