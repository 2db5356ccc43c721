"""Compiled CPU kernels (numba) for the recurrences of Mamba and Mamba-2.

transformers' pure-PyTorch paths run every elementwise stage of a state-space layer as
its own tensor operation over ``(batch, channels, length, state)`` values, so on a CPU
they are bound by memory traffic. These kernels fuse each recurrence, forward and
backward, into one compiled pass that keeps the state in cache
(:mod:`~statelayers.models.kernels.selective_scan` for Mamba-1,
:mod:`~statelayers.models.kernels.ssd` for Mamba-2, :mod:`~statelayers.models.kernels.causal_conv`
for both mixers' Conv1D); :mod:`~statelayers.models.kernels.gated_norm` does the same for
Mamba-2's gated RMSNorm, and :mod:`~statelayers.models.kernels.mamba2_block` runs those
three of Mamba-2's in training on the input projection in place. Only these modules
import numba (this package's ``__init__`` does not), and only CPU tensors reach them, so
a GPU machine without numba never imports it.
Compiled code is cached on disk (numba's ``cache=True``, beside the sources or in
``NUMBA_CACHE_DIR``), so only the first job on a machine pays for compilation.
"""

from __future__ import annotations

import functools
import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch


@functools.cache
def _numba_importable() -> bool:
    try:
        importlib.import_module("numba")
    except ImportError:
        return False
    return True


def runs_cpu_kernels(tensor: torch.Tensor) -> bool:
    """Whether the ``fast`` path computes ``tensor`` with these kernels: on CPU, where
    numba imports. numba is a dependency; a machine that runs the sources without it
    (the GPU check's) takes the PyTorch path for CPU tensors too."""
    return tensor.device.type == "cpu" and _numba_importable()
