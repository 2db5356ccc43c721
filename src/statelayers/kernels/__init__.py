"""Compiled CPU kernels (numba) for the recurrences of Mamba and Mamba-2.

transformers' pure-PyTorch paths run every elementwise stage of a state-space layer as
its own tensor operation over ``(batch, channels, length, state)`` values, so on a CPU
they are bound by memory traffic. These kernels fuse each recurrence, forward and
backward, into one compiled pass that keeps the state in cache
(:mod:`~statelayers.kernels.selective_scan` for Mamba-1,
:mod:`~statelayers.kernels.ssd` for Mamba-2, :mod:`~statelayers.kernels.causal_conv`
for both mixers' Conv1D). Only these modules import numba, and
only CPU tensors reach them, so a GPU machine without numba never imports it.
Compiled code is cached on disk (numba's ``cache=True``, beside the sources or in
``NUMBA_CACHE_DIR``), so only the first job on a machine pays for compilation.
"""

from __future__ import annotations

import os

import numba
import torch

if "NUMBA_THREADING_LAYER" not in os.environ:
    # numba's OpenMP layer loads the system libgomp beside the copy torch ships: two
    # thread pools whose idle workers spin for the same cores. numba's own workqueue
    # pool sleeps between calls. (The kernels are called from one thread at a time.)
    numba.config.THREADING_LAYER = "workqueue"


def use_torch_threads() -> None:
    """Run numba's parallel loops on as many threads as torch's intra-op pool, which
    :func:`statelayers.runtime.start` sets from the job's ``threads``."""
    numba.set_num_threads(max(1, min(torch.get_num_threads(), numba.config.NUMBA_NUM_THREADS)))
