"""Which implementation runs Mamba and Mamba-2: pure PyTorch, or the CUDA kernels.

transformers resolves each Mamba kernel function (causal conv1d, the selective scan,
the fused ``mamba_inner_fn``, Mamba-2's chunked scan, ...) once, when its modelling
module is imported: mamba-ssm's or causal-conv1d's implementation when those packages
import, else a PyTorch reference, which the wrapper keeps as ``__wrapped__``. The mixers
look these functions up as module globals at every call, so pointing the globals at the
references (``torch``) or back at what transformers resolved (``cuda``) switches the
backend of every model in the process. The weights are the same either way, so one
checkpoint runs under both.

``auto`` means ``cuda`` when the model runs on a CUDA device and both packages import,
else ``torch``. Under ``torch``, ``scan="fast"`` runs Mamba-1's selective scan and
Mamba-2's SSD scan from :mod:`statelayers.models.mamba_scan` and both mixers' causal
convolution from :mod:`statelayers.models.causal_conv` (compiled kernels on CPU, PyTorch on
other devices); ``scan="reference"`` runs transformers' own PyTorch code.

The kernels read ``conv1d.weight`` directly and never call the Conv1D module, which is
why the Conv1D ablation sets weights (:func:`statelayers.models.tagger.make_conv_identity`)
rather than hooking the module.
"""

from __future__ import annotations

import importlib
import inspect
import logging
from collections.abc import Callable

import torch

log = logging.getLogger(__name__)

BACKENDS = ("auto", "torch", "cuda")
KERNEL_FUNCTIONS = {
    "transformers.models.mamba.modeling_mamba": (
        "causal_conv1d_update",
        "causal_conv1d_fn",
        "mamba_inner_fn",
        "mamba_selective_state_update",
        "mamba_selective_scan",
    ),
    "transformers.models.mamba2.modeling_mamba2": (
        "causal_conv1d_update",
        "causal_conv1d_fn",
        "mamba2_split_conv1d_scan_combined",
        "mamba2_selective_state_update",
        "mamba2_chunk_scan",
    ),
}
KERNEL_PACKAGES = ("mamba_ssm", "causal_conv1d")

_RESOLVED: dict[tuple[str, str], Callable] = {
    (module, name): getattr(importlib.import_module(module), name)
    for module, names in KERNEL_FUNCTIONS.items()
    for name in names
}
"""What transformers resolved at import, captured before anything here repoints it."""


def kernels_importable() -> bool:
    """Whether mamba-ssm and causal-conv1d import (they are CUDA-only builds)."""
    try:
        for package in KERNEL_PACKAGES:
            importlib.import_module(package)
    except Exception:  # a CPU machine fails inside their CUDA extensions, not only with ImportError
        return False
    return True


def resolve_backend(backend: str, device: torch.device | str = "cpu") -> str:
    """``torch`` or ``cuda`` for a model on ``device``; ``cuda`` that cannot run is an error."""
    if backend not in BACKENDS:
        raise ValueError(f"unknown Mamba backend {backend!r}; expected one of {BACKENDS}")
    on_cuda = torch.device(device).type == "cuda"
    if backend == "auto":
        return "cuda" if on_cuda and kernels_importable() else "torch"
    if backend == "cuda" and not (on_cuda and kernels_importable()):
        raise RuntimeError(
            f"Mamba backend 'cuda' needs the model on a CUDA device (here: {torch.device(device)}) and the "
            "mamba-ssm and causal-conv1d packages (pip install -e '.[gpu]'); use 'torch' or 'auto'"
        )
    return backend


def implementation(function: Callable) -> str:
    """The package that actually computes ``function``: ``transformers`` for a PyTorch
    reference, else the kernel package its wrapper closes over (mamba_ssm, causal_conv1d)."""
    for cell in function.__closure__ or ():
        target = cell.cell_contents
        module = getattr(target, "__module__", "") or ""
        if callable(target) and module.split(".")[0] in KERNEL_PACKAGES:
            return module.split(".")[0]
    return (getattr(function, "__module__", "") or "").split(".")[0]


def use_backend(backend: str, device: torch.device | str = "cpu", scan: str = "fast") -> str:
    """Point transformers' Mamba and Mamba-2 kernel functions at ``backend`` for this
    process (under ``torch``: this package's scan and convolution, or transformers', as
    ``scan`` says); return the backend in use."""
    from statelayers.models.causal_conv import causal_conv1d
    from statelayers.models.mamba_scan import REFERENCE_CHUNK_SCAN, REFERENCE_SCAN, chunk_scan, selective_scan

    if scan not in ("fast", "reference"):
        raise ValueError(f"unknown Mamba scan {scan!r}; expected 'fast' or 'reference'")
    resolved = resolve_backend(backend, device)
    for (module_name, name), function in _RESOLVED.items():
        setattr(
            importlib.import_module(module_name),
            name,
            function if resolved == "cuda" else inspect.unwrap(function),
        )
    if resolved == "torch":
        mamba = importlib.import_module("transformers.models.mamba.modeling_mamba")
        mamba.mamba_selective_scan = selective_scan if scan == "fast" else REFERENCE_SCAN
        mamba2 = importlib.import_module("transformers.models.mamba2.modeling_mamba2")
        mamba2.mamba2_chunk_scan = chunk_scan if scan == "fast" else REFERENCE_CHUNK_SCAN
        if scan == "fast":
            for module_name in KERNEL_FUNCTIONS:
                importlib.import_module(module_name).causal_conv1d_fn = causal_conv1d
    return resolved
