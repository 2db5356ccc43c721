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

import numba
import torch


def use_torch_threads() -> int:
    """Run numba's parallel loops on as many threads as torch's intra-op pool, which
    :func:`statelayers.runtime.start` sets from the job's ``threads``; return that number
    (the kernels keep one scratch buffer per thread, indexed by ``numba.get_thread_id()``)."""
    threads = max(1, min(torch.get_num_threads(), numba.config.NUMBA_NUM_THREADS))
    numba.set_num_threads(threads)
    return threads
