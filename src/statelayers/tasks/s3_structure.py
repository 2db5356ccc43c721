"""S3 as A3 ⋊ Z2: each label's sign (its Z2 quotient) and rotation (its place in the coset).

Every permutation ``g`` of ``{0, 1, 2}`` is uniquely

.. math::
    g = r^k \\circ s^e,\\qquad r = (0\\,1\\,2) \\mapsto (1, 2, 0),\\quad s = (0\\,1) \\mapsto (1, 0, 2),

with the sign ``e = sign(g)`` in ``{0, 1}`` (0: even) and the rotation ``k`` in
``{0, 1, 2}``; ``(e, k) -> g`` is a bijection. The sign is a homomorphism
``S3 -> Z2``, so the sign of a prefix product is the parity of the number of odd tokens:
a parity task inside S3. The rotation is not a quotient: composing
``r^k s^e`` with ``r^j s^f`` gives ``r^{k + (-1)^e j} s^{e + f}``, so tracking it needs
the sign. Splitting a model's S3 errors into wrong signs and right-sign-wrong-rotation
errors (:func:`error_split`, on predictions of :func:`statelayers.models.inference.predict`)
says which of the two parts of the state it fails to track.

Labels are indices into :data:`statelayers.tasks.formal.S3_ELEMENTS` (lexicographic
order, 0 the identity), as the task's tokens and labels are.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from statelayers.tasks.formal import S3_ELEMENTS

CYCLE = (1, 2, 0)
"""``r``: the 3-cycle ``i -> i + 1 (mod 3)``, which generates A3."""
REFLECTION = (1, 0, 2)
"""``s``: the transposition of 0 and 1, a representative of the odd coset."""


def _permutation_sign(p: tuple[int, ...]) -> int:
    """0 for an even permutation, 1 for an odd one: the parity of its inversions."""
    return sum(p[i] > p[j] for i in range(len(p)) for j in range(i + 1, len(p))) % 2


def _compose(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    """``a ∘ b``: apply ``b`` first (the task's convention)."""
    return tuple(a[b[i]] for i in range(len(b)))


def _power(p: tuple[int, ...], k: int) -> tuple[int, ...]:
    result = tuple(range(len(p)))
    for _ in range(k):
        result = _compose(p, result)
    return result


def _decomposition() -> tuple[np.ndarray, np.ndarray]:
    """(sign, rotation) of every element index, found by searching ``r^k ∘ s^e``."""
    sign, rotation = np.empty(6, np.int64), np.empty(6, np.int64)
    for e in (0, 1):
        for k in range(3):
            index = S3_ELEMENTS.index(_compose(_power(CYCLE, k), _power(REFLECTION, e)))
            sign[index], rotation[index] = e, k
    return sign, rotation


SIGNS, ROTATIONS = _decomposition()
"""``SIGNS[i]``, ``ROTATIONS[i]``: the sign ``e`` and rotation ``k`` of element ``i``."""


def sign(labels: np.ndarray) -> np.ndarray:
    """The sign of each S3 label (0 even, 1 odd), elementwise."""
    return SIGNS[np.asarray(labels, dtype=np.int64)]


def rotation(labels: np.ndarray) -> np.ndarray:
    """The rotation ``k`` of each S3 label, ``g = r^k ∘ s^sign(g)``, elementwise."""
    return ROTATIONS[np.asarray(labels, dtype=np.int64)]


def error_split(predicted: np.ndarray, labels: np.ndarray) -> pd.DataFrame:
    """Per position (1-based) of ``(n, length)`` S3 predictions against labels: the share
    of tokens that are right (``accuracy``), of the wrong sign (``sign_error``), and of the
    right sign but the wrong rotation (``coset_error``); the three add up to 1. Also
    ``sign_accuracy`` (``1 - sign_error``) and ``rotation_accuracy_given_sign``: the share
    right among the tokens of the right sign, which is what the coset part adds."""
    predicted, labels = np.asarray(predicted), np.asarray(labels)
    if predicted.shape != labels.shape or predicted.ndim != 2:
        shapes = f"predictions {predicted.shape}, labels {labels.shape}"
        raise ValueError(f"{shapes}: expected one (n, length) shape")
    right = predicted == labels
    sign_wrong = sign(predicted) != sign(labels)
    coset_wrong = ~sign_wrong & ~right
    right_sign = (~sign_wrong).sum(0)
    return pd.DataFrame(
        {
            "position": np.arange(1, labels.shape[1] + 1),
            "n": labels.shape[0],
            "accuracy": right.mean(0),
            "sign_error": sign_wrong.mean(0),
            "coset_error": coset_wrong.mean(0),
            "sign_accuracy": 1 - sign_wrong.mean(0),
            "rotation_accuracy_given_sign": np.divide(
                right.sum(0), right_sign, out=np.full(labels.shape[1], np.nan), where=right_sign > 0
            ),
        }
    )


def probe_targets(labels: np.ndarray) -> dict[str, np.ndarray]:
    """The two parts of S3 labels as probe targets (``s3_sign``, ``s3_rotation``), for
    :func:`statelayers.measure.probes.fit_probe` on stored states' ``labels``."""
    return {"s3_sign": sign(labels), "s3_rotation": rotation(labels)}
