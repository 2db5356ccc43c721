"""Synthetic state-tracking tasks with a label at every position.

Vocabularies
------------
parity
    tokens ``0, 1`` (bits). Label ``y_t = x_1 XOR ... XOR x_t`` (2 classes).
s3
    tokens ``0..5`` index the six permutations of ``{0, 1, 2}`` in the lexicographic
    order of :data:`S3_ELEMENTS` (``0`` is the identity). A permutation ``p`` maps
    ``i -> p[i]``. Label ``y_t`` is the index of the prefix product
    ``P_t = x_t ∘ x_{t-1} ∘ ... ∘ x_1`` where ``(a ∘ b)[i] = a[b[i]]``: the first
    token acts first, as when the prefix is applied to a state one token at a time.
    6 classes; the group is non-commutative, so order matters.
dyck
    Dyck-k with ``k`` bracket types: token ``j`` opens type ``j`` and token ``k + j``
    closes it (``j = 0..k-1``). Label ``y_t`` is the type of the bracket on top of the
    stack after token ``t``, shifted by one (``0`` = empty stack, ``1..k`` = type), so
    ``k + 1`` classes. The depth after token ``t`` is a second target.

Dyck sampler
------------
Sequences are prefixes of well-formed Dyck words sampled as a random walk on the
depth: with an empty stack the next token opens; at ``max_depth`` it closes the top
bracket; otherwise it opens with probability ``open_prob`` (a uniformly random type)
and closes the top bracket otherwise. The walk reflects at 0 and ``max_depth``, so
depths spread over the whole range instead of hugging zero (a balanced-word sampler
mostly stays shallow); ``depth_histogram`` reports the distribution per length.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from itertools import permutations

import numpy as np
import pandas as pd

TASKS = ("parity", "s3", "dyck", "codedepth")
"""``codedepth`` (nesting depth of real Python code) lives in :mod:`statelayers.tasks.codedepth`:
its sequences are cut from a corpus, not generated here."""

S3_ELEMENTS: tuple[tuple[int, int, int], ...] = tuple(permutations(range(3)))
"""The six permutations of {0, 1, 2} in lexicographic order; token i is S3_ELEMENTS[i]."""


def _s3_table() -> np.ndarray:
    """``table[a, b]`` = index of ``a ∘ b`` (apply ``b`` first, then ``a``)."""
    index = {p: i for i, p in enumerate(S3_ELEMENTS)}
    table = np.empty((6, 6), dtype=np.int64)
    for a, pa in enumerate(S3_ELEMENTS):
        for b, pb in enumerate(S3_ELEMENTS):
            table[a, b] = index[tuple(pa[pb[i]] for i in range(3))]
    return table


S3_COMPOSE = _s3_table()


@dataclass(frozen=True)
class TaskSpec:
    """Sizes a model needs for a task: input vocabulary and number of label classes."""

    vocab_size: int
    num_classes: int
    targets: tuple[str, ...]
    """Per-token targets stored with the data; the first is the training label."""


def task_spec(task: str, params: Mapping | None = None) -> TaskSpec:
    """Vocabulary and classes of ``task`` under its generator ``params`` (dyck: ``k``)."""
    if task == "parity":
        return TaskSpec(vocab_size=2, num_classes=2, targets=("labels",))
    if task == "s3":
        return TaskSpec(vocab_size=6, num_classes=6, targets=("labels",))
    if task == "dyck":
        k = dict(params or {}).get("k", 2)
        return TaskSpec(vocab_size=2 * k, num_classes=k + 1, targets=("labels", "depth"))
    if task == "codedepth":
        from statelayers.tasks.codedepth import VOCAB

        max_depth = dict(params or {}).get("max_depth", 10)
        return TaskSpec(vocab_size=len(VOCAB), num_classes=max_depth + 1, targets=("labels",))
    raise ValueError(f"unknown task {task!r}; expected one of {TASKS}")


def parity_labels(tokens: np.ndarray) -> np.ndarray:
    """The running XOR of each row."""
    return np.bitwise_xor.accumulate(tokens, axis=1)


def s3_labels(tokens: np.ndarray) -> np.ndarray:
    """The index of each prefix product, the first token acting first."""
    labels = np.empty_like(tokens)
    state = np.zeros(len(tokens), dtype=np.int64)  # identity
    for t in range(tokens.shape[1]):
        state = S3_COMPOSE[tokens[:, t], state]
        labels[:, t] = state
    return labels


def dyck_labels(tokens: np.ndarray, k: int) -> np.ndarray:
    """Top-of-stack type plus one (0 = empty) after every token; raises on an ill-formed prefix."""
    n, length = tokens.shape
    if tokens.min(initial=0) < 0 or tokens.max(initial=0) >= 2 * k:
        raise ValueError(f"dyck tokens must lie in 0..{2 * k - 1}")
    rows = np.arange(n)
    stack = np.zeros((n, length), dtype=np.int64)
    depth = np.zeros(n, dtype=np.int64)
    labels = np.empty_like(tokens)
    for t in range(length):
        token = tokens[:, t]
        opens = token < k
        top = stack[rows, np.maximum(depth - 1, 0)]
        unmatched = ~opens & ((depth == 0) | (top != token - k))
        if unmatched.any():
            raise ValueError(f"dyck row {rows[unmatched][0]} closes an unopened bracket at position {t}")
        stack[rows[opens], depth[opens]] = token[opens]
        depth += np.where(opens, 1, -1)
        labels[:, t] = np.where(depth > 0, stack[rows, np.maximum(depth - 1, 0)] + 1, 0)
    return labels


def task_labels(task: str, tokens: np.ndarray, params: Mapping | None = None) -> np.ndarray:
    """The task's labels ``(n, L)`` recomputed from arbitrary token rows (not only the
    sampler's): activation patching labels the corrupted sequences with it."""
    tokens = np.asarray(tokens, dtype=np.int64)
    if task == "parity":
        return parity_labels(tokens)
    if task == "s3":
        return s3_labels(tokens)
    if task == "dyck":
        return dyck_labels(tokens, dict(params or {}).get("k", 2))
    raise ValueError(f"no labels for task {task!r}")


def parity(n: int, length: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    tokens = rng.integers(0, 2, size=(n, length))
    return {"tokens": tokens, "labels": parity_labels(tokens)}


def s3(n: int, length: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    tokens = rng.integers(0, 6, size=(n, length))
    return {"tokens": tokens, "labels": s3_labels(tokens)}


def dyck(
    n: int,
    length: int,
    rng: np.random.Generator,
    k: int,
    max_depth: int,
    open_prob: float,
) -> dict[str, np.ndarray]:
    if k < 1 or max_depth < 1:
        raise ValueError("dyck needs k >= 1 and max_depth >= 1")
    tokens = np.empty((n, length), dtype=np.int64)
    labels = np.empty_like(tokens)
    depth = np.empty_like(tokens)
    stack = np.zeros((n, max_depth), dtype=np.int64)  # bracket types, valid up to d
    d = np.zeros(n, dtype=np.int64)
    rows = np.arange(n)
    for t in range(length):
        opens = np.where(d == 0, True, np.where(d == max_depth, False, rng.random(n) < open_prob))
        kinds = rng.integers(0, k, size=n)
        top = stack[rows, np.maximum(d - 1, 0)]
        tokens[:, t] = np.where(opens, kinds, k + top)
        stack[rows[opens], d[opens]] = kinds[opens]
        d = d + np.where(opens, 1, -1)
        depth[:, t] = d
        labels[:, t] = np.where(d > 0, stack[rows, np.maximum(d - 1, 0)] + 1, 0)
    return {"tokens": tokens, "labels": labels, "depth": depth}


GENERATORS = {"parity": parity, "s3": s3, "dyck": dyck}


def generate(
    task: str, n: int, length: int, rng: np.random.Generator, params: Mapping | None = None
) -> dict[str, np.ndarray]:
    """``n`` sequences of ``length`` tokens with every target of ``task``, as int arrays.

    ``params`` are the task's generator keywords (dyck: ``k``, ``max_depth``, ``open_prob``).
    """
    if length < 1 or n < 1:
        raise ValueError(f"need n >= 1 and length >= 1, got n={n}, length={length}")
    if task not in GENERATORS:
        raise ValueError(f"no generator for task {task!r}; expected one of {tuple(GENERATORS)}")
    return GENERATORS[task](n, length, rng, **dict(params or {}))


def depth_histogram(depth: np.ndarray, max_depth: int) -> np.ndarray:
    """Fraction of tokens at each depth ``0..max_depth``."""
    counts = np.bincount(depth.ravel(), minlength=max_depth + 1)
    return counts / counts.sum()


def depth_table(depths: Mapping[int, np.ndarray], max_depth: int) -> pd.DataFrame:
    """Long table (eval_length, depth, fraction) from depth arrays keyed by length."""
    return pd.DataFrame(
        [
            {"eval_length": length, "depth": depth, "fraction": fraction}
            for length, values in sorted(depths.items())
            for depth, fraction in enumerate(depth_histogram(values, max_depth))
        ]
    )
