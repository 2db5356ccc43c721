"""Erasing a linear subspace from one layer's states, and what the model loses.

Every erasure is an affine map of rank-``r`` perturbation of the identity,

.. math::
    E(h) = h - \\big((h - b)\\, R\\big) L^\\top,\\qquad L, R \\in \\mathbb{R}^{d \\times r},

the form LEACE returns (``concept_erasure.LeaceEraser``). An orthogonal projection out
of the span of an orthonormal ``Q`` is ``L = R = Q`` with ``b = 0`` (zero-ablation of
those coordinates). The methods:

``probe``
    the row space of the fitted probe's weights, mapped back from standardised to raw
    coordinates (``W / sigma``) and centred over classes (softmax ignores a shared
    shift), so rank ``classes - 1``: the probe's decision directions.
``pca``
    the top-``k`` principal directions of the layer's states.
``random``
    uniformly random ``r``-dimensional subspaces (Haar), the chance level beside every
    other erasure of the same rank.
``inlp``
    iterative nullspace projection (Ravfogel et al. 2020): fit a probe, project out its
    directions, repeat; the union of all directions is erased at once.
``leace``
    least-squares concept erasure (Belrose et al. 2023): the minimal affine edit after
    which no linear classifier beats a constant predictor on the training states.

Each erasure is fit on the probe split at the training length and applied unchanged
at every evaluation length. After erasing with one of ``ErasureConfig.refit_methods``, a
fresh probe is fit on the erased states: if the variable is still decodable, the erased
subspace was not where it lived.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import torch
from sklearn.decomposition import PCA

from statelayers.measure.probes import ProbeConfig, fit_probe, sequence_split
from statelayers.measure.states import read_layers
from statelayers.models.inference import FORWARD_BATCH, predict, scores
from statelayers.models.tagger import SequenceTagger, StateEdit

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Erasure:
    """``h -> h - ((h - bias) @ right) @ left.T`` on the last axis."""

    method: str
    rank: int
    left: torch.Tensor
    right: torch.Tensor
    bias: torch.Tensor | None = None
    k: int | None = None
    """The method's size parameter (``pca`` components, ``inlp`` iterations)."""
    draw: int | None = None
    """Index of the random draw, for ``random``."""

    def __call__(self, hidden: torch.Tensor) -> torch.Tensor:
        left, right = self.left.to(hidden), self.right.to(hidden)
        delta = hidden - self.bias.to(hidden) if self.bias is not None else hidden
        return hidden - (delta @ right) @ left.T

    def apply_numpy(self, states: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            return self(torch.as_tensor(states, dtype=torch.float64)).numpy()


def projection(method: str, directions: np.ndarray, **labels) -> Erasure:
    """Orthogonal projection out of the span of ``directions`` (rows)."""
    basis = orthonormal_basis(directions)
    q = torch.as_tensor(basis, dtype=torch.float64)
    return Erasure(method, basis.shape[1], q, q, **labels)


def orthonormal_basis(directions: np.ndarray, tol: float = 1e-8) -> np.ndarray:
    """``(d, r)`` orthonormal basis of the row span of ``directions`` (numerical rank r)."""
    u, s, _ = np.linalg.svd(np.asarray(directions, dtype=np.float64).T, full_matrices=False)
    return u[:, s > tol * max(s.max(initial=0.0), 1e-300)]


def probe_directions(probe) -> np.ndarray:
    """Decision directions of a fitted ``StandardScaler + LogisticRegression`` pipeline in raw coordinates."""
    scaler, logistic = probe[0], probe[-1]
    weights = logistic.coef_ / scaler.scale_
    return weights if len(weights) == 1 else weights - weights.mean(axis=0)


def random_subspace(d: int, rank: int, rng: np.random.Generator) -> np.ndarray:
    """Rows spanning a Haar-random ``rank``-dimensional subspace of R^d."""
    q, r = np.linalg.qr(rng.standard_normal((d, rank)))
    return (q * np.sign(np.diag(r))).T


def inlp(
    X: np.ndarray,
    y: np.ndarray,
    groups: np.ndarray,
    iterations: int,
    config: ProbeConfig,
    first_probe=None,
) -> Erasure:
    """``first_probe``: the probe already fit on ``X`` with ``config`` (the first
    iteration's fit, which is deterministic), to save fitting it again."""
    directions = np.zeros((0, X.shape[1]))
    for iteration in range(iterations):
        if iteration == 0 and first_probe is not None:
            probe = first_probe
        else:
            erased = projection("inlp", directions).apply_numpy(X) if len(directions) else X
            probe, _ = fit_probe(erased, y, groups, config)
        directions = np.vstack([directions, probe_directions(probe)])
    return projection("inlp", directions, k=iterations)


def leace(X: np.ndarray, y: np.ndarray) -> Erasure:
    from concept_erasure import LeaceEraser

    classes = np.unique(y)
    one_hot = torch.as_tensor(y[:, None] == classes[None, :], dtype=torch.float64)
    eraser = LeaceEraser.fit(torch.as_tensor(X, dtype=torch.float64), one_hot)
    # proj_left has a column per class, but a one-hot concept spans classes - 1 directions.
    singular = torch.linalg.svdvals(eraser.proj_left @ eraser.proj_right)
    rank = int((singular > 1e-8 * singular.max()).sum())
    return Erasure("leace", rank, eraser.proj_left, eraser.proj_right.mH, eraser.bias)


@dataclass(frozen=True)
class ErasureConfig:
    """Which erasures a run gets: ``erasures`` of config/config.yaml (less its lengths and
    sequences, which choose the data) is the one source of these values, so nothing here
    has a default."""

    pca_k: tuple[int, ...]
    random_draws: int
    inlp_iterations: int
    fit_tokens: int
    """Tokens (whole sequences) of the probe split used to fit erasures and re-fit probes."""
    refit_methods: tuple[str, ...]
    """Methods whose erased states get a fresh probe; the others' ``refit_probe_accuracy``
    is NaN. Each re-fit is a logistic regression, most of an erasures job's time."""
    seed: int

    @classmethod
    def from_settings(cls, settings: dict) -> ErasureConfig:
        """From a run's erasure settings (YAML lists), less the keys that choose the data."""
        tuples = {"pca_k": tuple(settings["pca_k"]), "refit_methods": tuple(settings["refit_methods"])}
        return cls(**settings | tuples)


def sequence_subsample(groups: np.ndarray, max_tokens: int, seed: int) -> np.ndarray:
    """Indices of whole sequences, in random order of sequence, totalling at most ``max_tokens``.

    Every probe fit here costs a logistic regression; fitting on a fixed subsample of
    sequences keeps the dozens of fits per layer affordable.
    """
    ids, counts = np.unique(groups, return_counts=True)
    order = np.random.default_rng(seed).permutation(len(ids))
    keep = ids[order[np.cumsum(counts[order]) <= max(max_tokens, counts.max())]]
    return np.flatnonzero(np.isin(groups, keep))


def erasures(
    X: np.ndarray,
    y: np.ndarray,
    groups: np.ndarray,
    probe,
    config: ErasureConfig,
    probe_config: ProbeConfig,
    rng: np.random.Generator,
) -> Iterator[Erasure]:
    """Every erasure of one layer, each followed by its random controls of equal rank.

    Erasures are fit on the training sequences of the probe split only, so the probe
    re-fit afterwards is scored on sequences the erasure never saw (LEACE guarantees
    blindness on its own fitting data, which would make a re-fit there meaningless).
    """
    d = X.shape[1]
    train, _ = sequence_split(groups, probe_config)
    X_fit, y_fit = X[train], y[train]
    primary = [projection("probe", probe_directions(probe))]
    primary += [projection("pca", PCA(k).fit(X_fit).components_, k=k) for k in config.pca_k if k < d]
    primary += [inlp(X, y, groups, config.inlp_iterations, probe_config, probe), leace(X_fit, y_fit)]
    ranks = sorted({e.rank for e in primary if e.rank > 0})
    yield from primary
    for rank in ranks:
        for draw in range(config.random_draws):
            yield projection("random", random_subspace(d, rank, rng), k=rank, draw=draw)


def edited_predictions(
    model: SequenceTagger,
    data: dict[str, np.ndarray],
    clean_states: np.ndarray,
    layer: int,
    edit: StateEdit,
    batch_size: int = FORWARD_BATCH,
) -> np.ndarray:
    """Predicted labels ``(n, length)`` with ``edit`` applied at ``layer``, resuming each batch
    from the layer's clean states ``(layers, n, length, d)``: the blocks before it never rerun."""
    device = next(model.parameters()).device
    predicted = []
    for start in range(0, len(data["tokens"]), batch_size):
        state = torch.as_tensor(clean_states[layer, start : start + batch_size], device=device)
        with model.resumed_at(layer, state):
            tokens = data["tokens"][start : start + batch_size]
            predicted.append(predict(model, tokens, batch_size, edits={layer: edit})[0])
    return np.concatenate(predicted)


def drop_standard_error(before: np.ndarray, after: np.ndarray, labels: np.ndarray) -> float:
    """Standard error of an erasure's drop with the sequence as the unit: the standard
    deviation of the per-sequence drops in token accuracy over ``√n`` (tokens of one
    sequence are not independent draws), ``sd(a_i - b_i) / √n``; NaN for one sequence."""
    per_sequence = (before == labels).mean(axis=1) - (after == labels).mean(axis=1)
    if len(per_sequence) < 2:
        return float("nan")
    return float(per_sequence.std(ddof=1) / np.sqrt(len(per_sequence)))


def erasure_rows(
    model: SequenceTagger,
    probe_states: str,
    test_data: dict[int, dict[str, np.ndarray]],
    config: ErasureConfig,
    probe_config: ProbeConfig,
    run_seed: int = 0,
) -> list[dict]:
    """Every erasure at every layer, scored at every evaluation length.

    ``test_data`` maps evaluation length to arrays with ``tokens`` and ``labels``. A row
    of a method in ``config.refit_methods`` also carries the accuracy of a probe re-fit
    on the erased probe-split states.
    """
    before, clean, unedited = {}, {}, {}
    for length, data in test_data.items():
        unedited[length], clean[length] = predict(model, data["tokens"], keep_states=len(data["tokens"]))
        before[length] = scores(unedited[length], data["labels"])[0]
    rows = []
    start = time.perf_counter()
    for layer, columns in read_layers(probe_states):
        rows_fit = sequence_subsample(columns["seq_id"], config.fit_tokens, config.seed)
        X = columns["vector"][rows_fit].astype(np.float64)
        y, groups = columns["labels"][rows_fit], columns["seq_id"][rows_fit]
        probe, probe_scores = fit_probe(X, y, groups, probe_config)
        rng = np.random.default_rng([config.seed, run_seed, layer])  # own random controls per run and layer
        for erasure in erasures(X, y, groups, probe, config, probe_config, rng):
            refit_accuracy = float("nan")
            if erasure.method in config.refit_methods:
                _, refit = fit_probe(erasure.apply_numpy(X), y, groups, probe_config)
                refit_accuracy = refit["probe_accuracy"]
            for length, data in test_data.items():
                edited = edited_predictions(model, data, clean[length], layer, erasure)
                after = scores(edited, data["labels"])[0]
                rows.append(
                    {
                        "layer": layer,
                        "method": erasure.method,
                        "k": erasure.k,
                        "rank": erasure.rank,
                        "draw": erasure.draw,
                        "eval_length": length,
                        "accuracy_before": before[length],
                        "accuracy_after": after,
                        "drop": before[length] - after,
                        "drop_se": drop_standard_error(unedited[length], edited, data["labels"]),
                        "probe_accuracy": probe_scores["probe_accuracy"],
                        "refit_probe_accuracy": refit_accuracy,
                        "majority_baseline": probe_scores["majority_baseline"],
                    }
                )
        log.info("layer %d done: %d rows so far (%.0fs)", layer, len(rows), time.perf_counter() - start)
    return rows
