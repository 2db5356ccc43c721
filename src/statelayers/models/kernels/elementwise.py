"""Vectorisable ``exp``, ``softplus``, ``sigmoid`` and SiLU for the numba kernels.

numba compiles ``math.exp`` on float32 to a call of libm's scalar ``expf``: pip's
llvmlite is not built with Intel's SVML, so LLVM has no vector exponential and every
loop that contains one stays scalar (measured: about 2-3 ns per element). The float32
exponential here is the Cephes ``expf`` polynomial written in arithmetic only, which
the loop vectoriser turns into AVX2/AVX-512 code:

.. math::
    e^x = 2^k\\, p(r),\\quad k = \\lfloor x \\log_2 e + \\tfrac12 \\rfloor,\\quad
    r = x - k \\ln 2 \\in [-\\tfrac{\\ln 2}{2}, \\tfrac{\\ln 2}{2}],

with ``2^k`` built from its exponent bits; relative error about 1e-7 on ``[-87, 88]``
(inputs outside are clamped; ``e^{-87} = 1.6e-38``). ``softplus`` is
``max(x, 0) + log1p(e^{-|x|})`` with ``log1p(e) = 2 atanh(e / (2 + e))`` summed as a
series (``s = e / (2 + e) <= 1/3``, truncation below 1e-8, no cancellation for small
``e``); it equals PyTorch's ``softplus`` (threshold 20) to float32 precision.

Every function has a float32 body with float32 constants (a float64 constant would
promote the whole loop to float64) and a float64 body on libm, which the float64
``gradcheck`` tests use. They can be called from numba-compiled code only.
"""

from __future__ import annotations

import math

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic, overload

FASTMATH = {"contract", "reassoc", "nsz", "arcp"}
"""Reassociation lets reductions vectorise; no ``nnan``/``ninf``, the clamps need IEEE semantics."""

F = np.float32
_LOG2E, _LN2_HI, _LN2_LO = F(1.4426950408889634), F(0.693359375), F(-2.12194440e-4)
_P0, _P1, _P2 = F(1.9875691500e-4), F(1.3981999507e-3), F(8.3334519073e-3)
_P3, _P4, _P5 = F(4.1665795894e-2), F(1.6666665459e-1), F(5.0000001201e-1)
_LO, _HI, _ZERO, _HALF, _ONE, _TWO = F(-87.0), F(88.0), F(0.0), F(0.5), F(1.0), F(2.0)
_ATANH = tuple(F(1.0 / k) for k in (13, 11, 9, 7, 5, 3))


@intrinsic
def _float32_from_bits(typingctx, bits):
    """The float32 whose bit pattern is the low 32 bits of the integer ``bits``
    (a reinterpretation, not a conversion)."""
    if not isinstance(bits, types.Integer):
        return None

    def codegen(context, builder, signature, args):
        low = builder.trunc(args[0], ir.IntType(32)) if bits.bitwidth > 32 else args[0]
        return builder.bitcast(low, ir.FloatType())

    return types.float32(bits), codegen


@njit(inline="always", fastmath=FASTMATH)
def _exp32(x):
    x = min(max(x, _LO), _HI)
    k = np.floor(x * _LOG2E + _HALF)
    r = x - k * _LN2_HI - k * _LN2_LO
    p = (((((_P0 * r + _P1) * r + _P2) * r + _P3) * r + _P4) * r + _P5) * r * r + r + _ONE
    return p * _float32_from_bits((np.int32(k) + 127) << 23)


@njit(inline="always", fastmath=FASTMATH)
def _softplus32(x):
    e = _exp32(-abs(x))
    s = e / (e + _TWO)
    s2 = s * s
    c13, c11, c9, c7, c5, c3 = _ATANH
    series = (((((c13 * s2 + c11) * s2 + c9) * s2 + c7) * s2 + c5) * s2 + c3) * s2 + _ONE
    return max(x, _ZERO) + _TWO * s * series


def exp(x):
    """``e^x``."""
    raise TypeError("statelayers.models.kernels.elementwise.exp runs inside numba-compiled code only")


def softplus(x):
    """``log(1 + e^x)``, stable for every ``x``."""
    raise TypeError("statelayers.models.kernels.elementwise.softplus runs inside numba-compiled code only")


def sigmoid(x):
    """``1 / (1 + e^{-x})``, the derivative of :func:`softplus`."""
    raise TypeError("statelayers.models.kernels.elementwise.sigmoid runs inside numba-compiled code only")


@overload(exp, inline="always", fastmath=FASTMATH)
def _exp(x):
    return (lambda x: _exp32(x)) if x == types.float32 else (lambda x: math.exp(x))


@overload(softplus, inline="always", fastmath=FASTMATH)
def _softplus(x):
    if x == types.float32:
        return lambda x: _softplus32(x)
    return lambda x: max(x, 0.0) + math.log1p(math.exp(-abs(x)))


@overload(sigmoid, inline="always", fastmath=FASTMATH)
def _sigmoid(x):
    if x == types.float32:
        return lambda x: _ONE / (_ONE + _exp32(-x))
    return lambda x: 1.0 / (1.0 + math.exp(-x))


def silu(x):
    """``x sigmoid(x)``, Mamba's gate."""
    raise TypeError("statelayers.models.kernels.elementwise.silu runs inside numba-compiled code only")


def silu_grad(x):
    """``d silu(x) / dx = s (1 + x (1 - s))`` with ``s = sigmoid(x)``."""
    raise TypeError("statelayers.models.kernels.elementwise.silu_grad runs inside numba-compiled code only")


def zero(x):
    """``0`` of the type of ``x``, to start a float32 sum without promoting it to float64."""
    raise TypeError("statelayers.models.kernels.elementwise.zero runs inside numba-compiled code only")


@overload(silu, inline="always", fastmath=FASTMATH)
def _silu(x):
    return lambda x: x * sigmoid(x)


@overload(silu_grad, inline="always", fastmath=FASTMATH)
def _silu_grad(x):
    one = _ONE if x == types.float32 else 1.0

    def impl(x):
        s = sigmoid(x)
        return s * (one + x * (one - s))

    return impl


@overload(zero, inline="always")
def _zero(x):
    return (lambda x: _ZERO) if x == types.float32 else (lambda x: 0.0)
