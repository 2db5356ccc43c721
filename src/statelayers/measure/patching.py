"""Activation patching: how much of a logit gap one (layer, position) state carries.

A pair is a clean sequence ``x`` and a corrupted ``x'`` that differ in one early token,
chosen so that the task label at a later *metric position* ``s`` differs:
``y = y_s(x) != y' = y_s(x')``. The metric of a forward pass is the logit difference at
``s`` between the two labels,

.. math::
    m = z_s[y] - z_s[y'],

with clean value ``m_c`` and corrupted value ``m_x``. Patching ``(l, t)`` runs one input
with the state of tap ``l`` (0 = embedding, ``i`` = block ``i``) at position ``t``
replaced by the other input's state there:

denoising
    the corrupted input with the clean state patched in; the fraction of the gap
    recovered is :math:`(\\bar m_p - \\bar m_x) / (\\bar m_c - \\bar m_x)`;
noising
    the clean input with the corrupted state patched in; the fraction of the gap
    destroyed is :math:`(\\bar m_c - \\bar m_p) / (\\bar m_c - \\bar m_x)`,

with ``m_p`` the patched metric. Bars are means over the pairs with ``t <= s``: the
models are causal, so a patch after the metric position cannot change it. Both
fractions are 0 where a state carries nothing of the corruption and 1 where it carries
all of it (the embedding at the corrupted token, or the last tap at ``s``, which the
head reads directly).

Corruptions, per task:

parity
    flip the bit at ``earliest``; ``s = L - 1``.
s3
    replace the element at ``earliest`` by another; ``s = L - 1`` (multiplying by a
    group element is a bijection, so every later prefix product changes).
dyck
    change the type of the first opening bracket at or after ``earliest``, and of its
    matching closing bracket, so the sequence stays well formed; ``s`` is the position
    just before that closing bracket (``L - 1`` if it never closes). Up to ``s`` the
    inputs differ in one token, and at ``s`` the changed bracket is on top of the
    stack whenever it closes later.

``codedepth`` has no such corruption: its sequences are tokenised real code, and
retyping one token of it gives no sequence of the corpus's distribution.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import nullcontext
from dataclasses import dataclass

import numpy as np
import torch

from statelayers.models.inference import FORWARD_BATCH
from statelayers.models.tagger import SequenceTagger
from statelayers.tasks.formal import task_labels

DIRECTIONS = ("denoising", "noising")


@dataclass(frozen=True)
class Pairs:
    """Clean and corrupted sequences ``(n, L)`` with their labels at the metric position."""

    clean: np.ndarray
    corrupted: np.ndarray
    clean_labels: np.ndarray
    corrupted_labels: np.ndarray
    corrupt_position: np.ndarray
    metric_position: np.ndarray
    source: np.ndarray
    """Row of the input tokens each pair was made from."""

    def __len__(self) -> int:
        return len(self.clean)


def _dyck_corruption(
    tokens: np.ndarray, k: int, earliest: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Corrupted rows, corrupt and metric positions (-1 where a row has no opening bracket)."""
    corrupted = tokens.copy()
    n, length = tokens.shape
    corrupt = np.full(n, -1)
    metric = np.full(n, -1)
    if k < 2:  # a single bracket type has no other to change to
        return corrupted, corrupt, metric
    shifts = rng.integers(1, k, size=n)
    for i, row in enumerate(tokens):
        opening = np.flatnonzero(row[earliest:] < k)
        if not len(opening):
            continue
        p = earliest + opening[0]
        new = (row[p] + shifts[i]) % k
        corrupted[i, p] = new
        close, depth = length, 0
        for s in range(p + 1, length):
            if row[s] < k:
                depth += 1
            elif depth == 0:
                close = s
                break
            else:
                depth -= 1
        if close < length:
            corrupted[i, close] = k + new
        corrupt[i], metric[i] = p, close - 1
    return corrupted, corrupt, metric


def corrupted_pairs(
    task: str,
    tokens: np.ndarray,
    labels: np.ndarray,
    params: Mapping | None,
    n_pairs: int,
    earliest: int,
    rng: np.random.Generator,
) -> Pairs:
    """The first ``n_pairs`` sequences of ``tokens`` that admit a corruption at or after
    position ``earliest`` (see the module docstring), each with its corrupted copy.

    ``labels`` must equal the task's labels recomputed from ``tokens``
    (:func:`statelayers.tasks.formal.task_labels`, which also labels the corrupted
    copies), so a data file that disagrees with the rule is caught here.
    """
    if task == "codedepth":
        raise ValueError(
            "activation patching is not defined for codedepth: its sequences are real code, "
            "and retyping one token gives no sequence of the corpus"
        )
    if task not in ("parity", "s3", "dyck"):
        raise ValueError(f"activation patching is not defined for task {task!r}")
    if earliest < 0:
        raise ValueError(f"{task}: earliest must be >= 0, got {earliest}")
    tokens = np.asarray(tokens, dtype=np.int64)
    n, length = tokens.shape
    clean_all = task_labels(task, tokens, params)
    if not np.array_equal(clean_all, labels):
        raise ValueError(f"{task}: the labels disagree with a recomputation from the tokens")
    if task == "dyck":
        corrupted, corrupt, metric = _dyck_corruption(tokens, dict(params or {}).get("k", 2), earliest, rng)
    else:
        corrupted = tokens.copy()
        corrupt, metric = np.full(n, earliest), np.full(n, length - 1)
        if earliest < length:
            old = tokens[:, earliest]
            corrupted[:, earliest] = 1 - old if task == "parity" else (old + rng.integers(1, 6, size=n)) % 6
    corrupted_all = task_labels(task, corrupted, params)
    valid = (corrupt >= 0) & (metric - corrupt >= 1)
    rows = np.flatnonzero(valid)
    y, y_corrupted = clean_all[rows, metric[rows]], corrupted_all[rows, metric[rows]]
    if task != "dyck":
        assert (y != y_corrupted).all(), f"{task}: one changed token left a later label unchanged"
    keep = rows[y != y_corrupted][:n_pairs]
    if not len(keep):
        raise ValueError(f"{task}: no sequence admits a corruption at or after position {earliest}")
    return Pairs(
        clean=tokens[keep],
        corrupted=corrupted[keep],
        clean_labels=clean_all[keep, metric[keep]],
        corrupted_labels=corrupted_all[keep, metric[keep]],
        corrupt_position=corrupt[keep],
        metric_position=metric[keep],
        source=keep,
    )


@dataclass(frozen=True)
class PositionPatch:
    """Edit that writes ``donor[i]`` into row ``i`` of a tap's states at ``positions[i]``."""

    donor: torch.Tensor
    """``(batch, d_model)``"""
    positions: torch.Tensor
    """``(batch,)``"""

    def __call__(self, hidden: torch.Tensor) -> torch.Tensor:
        patched = hidden.clone()
        rows = torch.arange(len(hidden), device=hidden.device)
        patched[rows, self.positions.to(hidden.device)] = self.donor.to(hidden)
        return patched


def _logit_difference(
    logits: torch.Tensor, metric: torch.Tensor, clean: torch.Tensor, corrupted: torch.Tensor
) -> np.ndarray:
    """``z_s[y] - z_s[y']`` per row of ``logits (batch, L, classes)``."""
    rows = torch.arange(len(logits), device=logits.device)
    at = logits[rows, metric]
    return (at[rows, clean] - at[rows, corrupted]).double().cpu().numpy()


@dataclass(frozen=True)
class _Run:
    """One unpatched input of every pair on the model's device: tokens, every tap's states, metric."""

    tokens: torch.Tensor
    states: list[torch.Tensor]
    metric: np.ndarray


@torch.no_grad()
def patching_rows(model: SequenceTagger, pairs: Pairs, batch_size: int = FORWARD_BATCH) -> list[dict]:
    """Denoising and noising fractions at every (tap, position), as table rows.

    Every tap's clean and corrupted states come from one forward each. Each patched
    pass repeats a base sequence per (pair, position), resumes at the tap from the base
    states (the blocks before it never rerun) and is cut after the latest metric
    position in its batch (causal models: later tokens cannot reach it).
    """
    model.eval()
    device = next(model.parameters()).device
    targets = tuple(
        torch.as_tensor(a, device=device)
        for a in (pairs.metric_position, pairs.clean_labels, pairs.corrupted_labels)
    )
    runs = {}
    for name, tokens in (("clean", pairs.clean), ("corrupted", pairs.corrupted)):
        tokens = torch.as_tensor(tokens, device=device)
        chunks = [model(chunk, return_states=True) for chunk in tokens.split(batch_size)]
        logits = torch.cat([logits for logits, _ in chunks])
        states = [torch.cat(layer) for layer in zip(*(states for _, states in chunks), strict=True)]
        runs[name] = _Run(tokens, states, _logit_difference(logits, *targets))
    m_clean, m_corrupted = runs["clean"].metric, runs["corrupted"].metric

    # (pair, position) combinations with position <= metric position, pairs in order of
    # metric position so that each batch is cut no longer than it must be.
    order = np.argsort(pairs.metric_position, kind="stable")
    combo_pair = np.concatenate([np.full(pairs.metric_position[i] + 1, i) for i in order])
    combo_position = np.concatenate([np.arange(pairs.metric_position[i] + 1) for i in order])

    rows = []
    for tap in range(len(runs["clean"].states)):
        for direction in DIRECTIONS:
            into, donor = ("corrupted", "clean") if direction == "denoising" else ("clean", "corrupted")
            patched = _patched_metrics(
                model,
                runs[into],
                runs[donor].states[tap],
                tap,
                (combo_pair, combo_position),
                targets,
                batch_size,
            )
            for position in np.unique(combo_position):
                at = combo_position == position
                who = combo_pair[at]
                clean, corrupted, value = m_clean[who].mean(), m_corrupted[who].mean(), patched[at].mean()
                gap = clean - corrupted
                moved = value - corrupted if direction == "denoising" else clean - value
                rows.append(
                    {
                        "layer": tap,
                        "position": int(position),
                        "direction": direction,
                        "fraction": float(moved / gap) if gap != 0 else float("nan"),
                        "mean_patched_metric": float(value),
                        "clean_metric": float(clean),
                        "corrupted_metric": float(corrupted),
                        "n_pairs": int(at.sum()),
                    }
                )
    return rows


def _patched_metrics(
    model: SequenceTagger,
    base: _Run,
    donor_states: torch.Tensor,
    tap: int,
    combos: tuple[np.ndarray, np.ndarray],
    targets: tuple[torch.Tensor, ...],
    batch_size: int,
) -> np.ndarray:
    """The metric of every (pair, position) combination, ``base`` run with tap ``tap``
    at that position taken from ``donor_states``."""
    metric, clean_label, corrupted_label = targets
    device = base.tokens.device
    values = []
    for start in range(0, len(combos[0]), batch_size):
        pair = torch.as_tensor(combos[0][start : start + batch_size], device=device)
        position = torch.as_tensor(combos[1][start : start + batch_size], device=device)
        cut = int(metric[pair].max()) + 1
        patch = PositionPatch(donor_states[pair, position], position)
        resumed = model.resumed_at(tap, base.states[tap][pair, :cut]) if tap > 0 else nullcontext()
        with resumed:
            logits = model(base.tokens[pair, :cut], edits={tap: patch})
        values.append(_logit_difference(logits, metric[pair], clean_label[pair], corrupted_label[pair]))
    return np.concatenate(values)
