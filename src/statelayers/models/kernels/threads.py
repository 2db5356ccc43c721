"""numba's thread pool sized like torch's, for the kernels' parallel loops."""

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
