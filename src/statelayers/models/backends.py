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
Mamba-2's SSD scan and gated RMSNorm (``Mamba2RMSNormGated.forward``) from
:mod:`statelayers.models.mamba_scan` and both mixers' causal convolution from
:mod:`statelayers.models.causal_conv` (compiled kernels on CPU, PyTorch on other devices);
``scan="reference"`` and the ``cuda`` backend run transformers' own PyTorch code there.

The kernels read ``conv1d.weight`` directly and never call the Conv1D module, which is
why the Conv1D ablation sets weights (:func:`statelayers.models.tagger.make_conv_identity`)
rather than hooking the module.

Under ``cuda`` the causal convolution gets its input through :func:`kernel_strides`:
outside training (where Mamba-2's fused kernel runs the convolution itself) transformers
hands causal-conv1d a channel-last view into the input projection, whose strides the
kernel rejects unless they are multiples of 8 (Mamba-2 at an odd ``expand``, for one).

Importing this module applies :data:`statelayers.runtime.KERNEL_ENVIRONMENT` before
transformers' Mamba modules import mamba-ssm (it reads ``MAMBA_DETERMINISTIC`` then).

:func:`counting_kernel_calls` counts the calls that reach the kernel packages, so a test
can tell the kernels ran from the two backends merely agreeing: transformers' wrapper
falls back to PyTorch silently (inputs on a device the package does not support), and a
mixer whose fused kernel returned nothing takes its unfused PyTorch path.
"""

from __future__ import annotations

import importlib
import inspect
import logging
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import CellType

import torch

from statelayers.runtime import kernel_environment

log = logging.getLogger(__name__)
kernel_environment()  # before the imports below, which import mamba-ssm where it is installed

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
    """Whether transformers bound every Mamba and Mamba-2 kernel function to mamba-ssm or
    causal-conv1d when it imported its modules (:data:`KERNEL_FUNCTIONS`).

    The packages importing is not enough: transformers binds each function on its own and
    falls back to PyTorch, silently, on any import error (mamba-ssm's package root imports
    the compiled ``selective_scan_cuda``, for one). Versions of transformers that publish
    ``is_fast_path_available`` must also say ``True`` there.
    """
    for module_name in KERNEL_FUNCTIONS:
        if getattr(importlib.import_module(module_name), "is_fast_path_available", True) is not True:
            return False
    return all(implementation(function) in KERNEL_PACKAGES for function in _RESOLVED.values())


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


def _package(function: object) -> str:
    return (getattr(function, "__module__", "") or "").split(".")[0]


def kernel_cells(function: Callable, depth: int = 3) -> list[CellType]:
    """The closure cells that hold the kernel packages' functions (mamba_ssm, causal_conv1d)
    ``function`` calls: those of transformers' wrapper, also through up to ``depth``
    wrappers around that one (:func:`kernel_strides`'s); nearest first."""
    contents = []
    for cell in getattr(function, "__closure__", None) or ():
        try:
            contents.append((cell, cell.cell_contents))
        except ValueError:  # a cell not assigned yet
            continue
    cells = [cell for cell, target in contents if callable(target) and _package(target) in KERNEL_PACKAGES]
    if depth > 0:
        for _, target in contents:
            if inspect.isfunction(target) and _package(target) not in KERNEL_PACKAGES:
                cells.extend(kernel_cells(target, depth - 1))
    return cells


def implementation(function: Callable, depth: int = 3) -> str:
    """The package that actually computes ``function``: ``transformers`` for a PyTorch
    reference, else the kernel package its wrapper closes over (mamba_ssm, causal_conv1d),
    also through up to ``depth`` wrappers around that one (:func:`kernel_cells`)."""
    if _package(function) in KERNEL_PACKAGES:
        return _package(function)
    cells = kernel_cells(function, depth)
    return _package(cells[0].cell_contents) if cells else _package(function)


@contextmanager
def counting_kernel_calls() -> Iterator[Counter[str]]:
    """Count the calls that reach mamba-ssm's or causal-conv1d's functions through
    transformers' Mamba and Mamba-2 modules while the block runs, by the model family and
    the package function's name (``mamba.mamba_inner_fn``, ``mamba2.causal_conv1d_fn``).

    The count is taken where a call enters the package, not where the mixer calls
    transformers' wrapper, which may still run PyTorch: for the block, each closure cell
    that holds a package function (:func:`kernel_cells`) holds a counting wrapper around
    it. Under the ``torch`` backend nothing is a kernel, so nothing is counted.
    """
    counts: Counter[str] = Counter()
    cells: dict[int, tuple[CellType, str]] = {}
    for module_name, names in KERNEL_FUNCTIONS.items():
        module = importlib.import_module(module_name)
        family = module_name.rsplit(".", 1)[1].removeprefix("modeling_")
        for name in names:
            for cell in kernel_cells(getattr(module, name)):
                cells[id(cell)] = (cell, f"{family}.{cell.cell_contents.__name__}")
    kernels = [(cell, cell.cell_contents) for cell, _ in cells.values()]

    def counted(kernel: Callable, key: str) -> Callable:
        def counting(*args, **kwargs):
            counts[key] += 1
            return kernel(*args, **kwargs)

        return counting

    for cell, key in cells.values():
        cell.cell_contents = counted(cell.cell_contents, key)
    try:
        yield counts
    finally:
        for cell, kernel in kernels:
            cell.cell_contents = kernel


def kernel_layout(x: torch.Tensor) -> torch.Tensor:
    """``x`` ``(batch, channels, length)``, copied where causal-conv1d's kernel would reject
    its strides, else itself.

    The kernel takes a channels-first input (stride 1 along the length) of any size, and
    a channel-last one (stride 1 along the channels) only when the channels and the
    strides of the batch and the length are multiples of 8 (``causal_conv1d_fwd`` and
    ``causal_conv1d_bwd`` check it). transformers' Mamba-2 outside training passes a
    channel-last view into the input projection, whose length stride is that projection's
    width (``2 * expand * d_model + 2 * state_size + heads``: 84 at ``d_model`` 16 and
    ``expand`` 2; not a multiple of 8 at an odd ``expand`` with the study's 128, 64 and
    32). As mamba-ssm's ``ensure_stride`` does for its fused kernel, such a view becomes a
    dense channel-last copy (stride ``channels`` along the length), or a channels-first
    one where the channels are not a multiple of 8.
    """
    if x.dim() != 3 or x.stride(1) != 1 or x.stride(2) <= 1:
        return x  # channels-first, or a layout the kernel's Python side makes contiguous
    if x.shape[1] % 8:
        return x.contiguous()
    if x.stride(0) % 8 or x.stride(2) % 8:
        return x.transpose(1, 2).contiguous().transpose(1, 2)
    return x


def kernel_strides(function: Callable) -> Callable:
    """``function`` (causal-conv1d's ``causal_conv1d_fn``, as transformers bound it) with
    its input laid out by :func:`kernel_layout` first; everything else passes unchanged."""

    def causal_conv1d_fn(x: torch.Tensor, *args, **kwargs) -> torch.Tensor:
        return function(kernel_layout(x), *args, **kwargs)

    causal_conv1d_fn.__doc__ = function.__doc__
    return causal_conv1d_fn


def use_backend(backend: str, device: torch.device | str = "cpu", scan: str = "fast") -> str:
    """Point transformers' Mamba and Mamba-2 kernel functions at ``backend`` for this
    process (under ``torch``: this package's scan and convolution, or transformers', as
    ``scan`` says); return the backend in use."""
    from statelayers.models.causal_conv import causal_conv1d
    from statelayers.models.mamba_scan import (
        REFERENCE_CHUNK_SCAN,
        REFERENCE_GATED_NORM,
        REFERENCE_SCAN,
        chunk_scan,
        gated_norm_forward,
        selective_scan,
        split_conv1d_scan_combined,
    )

    if scan not in ("fast", "reference"):
        raise ValueError(f"unknown Mamba scan {scan!r}; expected 'fast' or 'reference'")
    resolved = resolve_backend(backend, device)
    mamba2 = importlib.import_module("transformers.models.mamba2.modeling_mamba2")
    fast = resolved == "torch" and scan == "fast"
    mamba2.Mamba2RMSNormGated.forward = gated_norm_forward if fast else REFERENCE_GATED_NORM
    for (module_name, name), function in _RESOLVED.items():
        if resolved == "torch":
            function = inspect.unwrap(function)
        elif name == "causal_conv1d_fn":
            function = kernel_strides(function)
        setattr(importlib.import_module(module_name), name, function)
    if resolved == "torch":
        mamba = importlib.import_module("transformers.models.mamba.modeling_mamba")
        mamba.mamba_selective_scan = selective_scan if scan == "fast" else REFERENCE_SCAN
        mamba2.mamba2_chunk_scan = chunk_scan if scan == "fast" else REFERENCE_CHUNK_SCAN
        if scan == "fast":
            mamba2.mamba2_split_conv1d_scan_combined = split_conv1d_scan_combined
            for module_name in KERNEL_FUNCTIONS:
                importlib.import_module(module_name).causal_conv1d_fn = causal_conv1d
    return resolved
