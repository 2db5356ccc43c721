"""Which GPU of the host a model job of a local run uses.

Snakemake's ``gpu`` resource is a counter: ``--resources gpu=K`` runs K model jobs at once
but sets no ``CUDA_VISIBLE_DEVICES``, so on a host with several GPUs every job would run
on the first. Here each model job takes a slot on one of the host's GPUs from a pool of
lock files under ``.snakemake/`` and sets ``CUDA_VISIBLE_DEVICES`` to that GPU before
torch initialises CUDA (the CUDA runtime reads the variable once, at initialisation). A
slot is an exclusive ``flock`` on its file, held until the process ends, however it ends:
a killed job leaves no GPU taken, and two jobs never hold one slot. Slots are handed out
level by level (slot 0 of every GPU before slot 1 of any), so K jobs spread evenly over
the GPUs, and K up to the number of GPUs gives each job a GPU of its own.

Where ``CUDA_VISIBLE_DEVICES`` is already set (Slurm sets it for the GPUs it granted the
job), that choice wins and no slot is taken.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
from collections.abc import MutableMapping, Sequence
from pathlib import Path
from typing import IO

POOL = Path(".snakemake") / "gpu-slots"
"""The lock files' folder, relative to the working directory Snakemake runs jobs in."""
VISIBLE = "CUDA_VISIBLE_DEVICES"

_held: list[IO] = []
"""The open lock files of the slots this process holds: closing one would release it."""


def host_gpus() -> list[str]:
    """The indices of the host's GPUs, from ``nvidia-smi`` (which, unlike torch, does not
    initialise CUDA in this process); none where it is missing or fails."""
    if shutil.which("nvidia-smi") is None:
        return []
    listing = subprocess.run(
        ["nvidia-smi", "--query-gpu=index", "--format=csv,noheader"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    return listing.stdout.split() if listing.returncode == 0 else []


def take_slot(gpus: Sequence[str], pool: Path = POOL) -> str:
    """Hold the first free slot, level by level over ``gpus``, for the rest of this
    process; return its GPU."""
    pool.mkdir(parents=True, exist_ok=True)
    level = 0
    while True:
        for gpu in gpus:
            handle = open(pool / f"gpu{gpu}-slot{level}.lock", "a")
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                handle.close()
                continue
            _held.append(handle)
            return gpu
        level += 1


def choose_gpu(
    environ: MutableMapping[str, str] = os.environ, gpus: Sequence[str] | None = None, pool: Path = POOL
) -> str | None:
    """Set ``CUDA_VISIBLE_DEVICES`` in ``environ`` to a GPU of :func:`take_slot` and return
    it, unless the variable is set already or the host has fewer than two GPUs
    (``gpus``, default :func:`host_gpus`); then leave it and return ``None``."""
    if VISIBLE in environ:
        return None
    gpus = host_gpus() if gpus is None else gpus
    if len(gpus) < 2:
        return None
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():
        raise RuntimeError(f"CUDA is initialised already: setting {VISIBLE} now would have no effect")
    gpu = take_slot(gpus, pool)
    environ[VISIBLE] = gpu
    return gpu


def job_gpus() -> int:
    """The ``gpu`` resource of the Snakemake job this process runs, 0 outside one.

    A ``script:`` job's file runs as ``__main__`` with Snakemake's ``snakemake`` object
    among its globals, so the job's resources are read there rather than passed by every
    script."""
    job = getattr(sys.modules.get("__main__"), "snakemake", None)
    return int(getattr(getattr(job, "resources", None), "gpu", 0) or 0)
