"""``python -m statelayers.models.kernels``: compile every kernel the workflow runs (float32,
forward and backward) into numba's on-disk cache.

``make env`` runs it once, so no training job pays for compilation (about 17 s on the
2-core machine); with the cache warm it takes about 0.3 s.
"""

import time

import torch

from statelayers.models.kernels.causal_conv import causal_conv1d_fn
from statelayers.models.kernels.gated_norm import gated_rms_norm
from statelayers.models.kernels.selective_scan import selective_scan_fn
from statelayers.models.kernels.ssd import mamba_chunk_scan_combined
from statelayers.models.kernels.ssd_quadratic import QuadraticSSD


def leaf(*shape: int) -> torch.Tensor:
    return torch.randn(*shape, requires_grad=True)


start = time.perf_counter()
for z in (leaf(2, 8, 5), None):  # gated, as in transformers' Mamba, and not
    u, delta, A, B, C, D, bias = (
        leaf(2, 8, 5),
        leaf(2, 8, 5),
        leaf(8, 4),
        leaf(2, 4, 5),
        leaf(2, 4, 5),
        leaf(8),
        leaf(8),
    )
    selective_scan_fn(u, delta, A, B, C, D, z, bias, delta_softplus=True).sum().backward()
x, dt, A, B, C, D, bias = (
    leaf(2, 5, 2, 4),
    leaf(2, 5, 2),
    leaf(2),
    leaf(2, 5, 1, 3),
    leaf(2, 5, 1, 3),
    leaf(2),
    leaf(2),
)
mamba_chunk_scan_combined(x, dt, A, B, C, 5, D=D, dt_bias=bias, dt_softplus=True).sum().backward()
QuadraticSSD.apply(leaf(2, 5, 2, 4), leaf(2, 5, 2), leaf(2), leaf(2, 1, 5, 5), leaf(2)).sum().backward()
gated_rms_norm(leaf(2, 5, 8), leaf(2, 5, 8), leaf(8), 1e-6, 4).sum().backward()
for activation in ("silu", None):
    causal_conv1d_fn(leaf(2, 8, 5), leaf(8, 4), leaf(8), activation).sum().backward()
seconds = time.perf_counter() - start
print(f"statelayers.models.kernels: compiled or loaded from numba's cache in {seconds:.2f} s")
