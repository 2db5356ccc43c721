"""Per-layer linear probes on frozen hidden states.

A probe is scikit-learn's multinomial logistic regression on standardised states,
fitted to convergence. Its default solver is Newton-CG: L2-penalised logistic
regression has one optimum whatever the solver, and on these states (128 dimensions,
up to 11 classes, nearly separable in the deep layers) L-BFGS needs up to about 1500
iterations to reach it, where Newton-CG needs about 20 (benchmarks/probe_solver.csv).
Train and test tokens are split by sequence (``GroupShuffleSplit``), so no sequence
contributes to both. The majority baseline is the test accuracy of always predicting
the most frequent training label.

Selectivity (Hewitt and Liang, 2019): a control task gives every token type a fixed
label drawn from the target's label distribution, so it can only be solved by reading
the current token. The same probe is fit on it, and ``selectivity = probe_accuracy -
control_accuracy``: how much more a layer tells about the target than a probe could
memorise from token identity. With the formal tasks' 2-6 token types the control task
is easy wherever the current token is decodable, so selectivity is low in layers that
mostly carry the token: the control is degenerate here (Hewitt and Liang built it for
word types of large vocabularies, where memorising a type costs the probe capacity).

Two baselines that carry information on these tasks sit beside every probe in
``probes.csv`` (:func:`with_baselines`):

- ``untrained_accuracy``: the same probe fit on the run's untrained twin (its
  architecture at the run's initial weights), what the architecture makes readable
  before any learning; ``gain_over_untrained = probe_accuracy - untrained_accuracy``;
- ``token_baseline``: what the current input token alone predicts (its majority label);
  ``gain_over_token = probe_accuracy - token_baseline``.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GroupShuffleSplit
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import StandardScaler


@dataclass(frozen=True)
class ProbeConfig:
    """How a probe is fit: ``probes`` of config/config.yaml is the one source of these
    values, so nothing here has a default."""

    C: float
    max_iter: int
    solver: str
    test_fraction: float
    seed: int


def make_probe(config: ProbeConfig) -> Pipeline:
    return make_pipeline(
        StandardScaler(), LogisticRegression(C=config.C, max_iter=config.max_iter, solver=config.solver)
    )


def sequence_split(groups: np.ndarray, config: ProbeConfig) -> tuple[np.ndarray, np.ndarray]:
    """Token indices (train, test) such that each sequence falls wholly on one side."""
    splitter = GroupShuffleSplit(n_splits=1, test_size=config.test_fraction, random_state=config.seed)
    return next(splitter.split(np.zeros(len(groups)), groups=groups))


def majority_class(labels: np.ndarray) -> int:
    values, counts = np.unique(labels, return_counts=True)
    return int(values[np.argmax(counts)])


def fit_probe(
    X: np.ndarray, y: np.ndarray, groups: np.ndarray, config: ProbeConfig
) -> tuple[Pipeline, dict[str, float]]:
    """Fit on the train sequences; score on the held-out ones."""
    train, test = sequence_split(groups, config)
    with warnings.catch_warnings():
        # Non-convergence is reported per probe in the table instead of once per fit in the log.
        warnings.simplefilter("ignore", ConvergenceWarning)
        probe = make_probe(config).fit(X[train], y[train])
    probe.majority_class_ = majority_class(y[train])
    return probe, {
        "probe_accuracy": float(probe.score(X[test], y[test])),
        "train_accuracy": float(probe.score(X[train], y[train])),
        "majority_baseline": float(np.mean(y[test] == probe.majority_class_)),
        "n_train": len(train),
        "n_test": len(test),
        "converged": bool(np.all(probe[-1].n_iter_ < config.max_iter)),
    }


def control_labels(n_types: int, y: np.ndarray, seed: int) -> np.ndarray:
    """Hewitt-Liang control task: the label of each token id ``0..n_types-1``, drawn once
    from the empirical distribution of ``y`` (seeded: every layer of a run shares it).
    Index it with tokens to relabel them."""
    values, counts = np.unique(y, return_counts=True)
    return np.random.default_rng(seed).choice(values, size=n_types, p=counts / counts.sum())


def token_baseline(tokens: np.ndarray, y: np.ndarray, train: np.ndarray) -> dict[int, int]:
    """Majority label of each input token on the training part: what the current token alone predicts.

    On Dyck the top-of-stack label equals the token after every opening bracket, so a
    probe must beat this, not only the majority class, before a layer "holds the stack".
    """
    fallback = majority_class(y[train])
    return {int(t): majority_class(y[train][tokens[train] == t]) for t in np.unique(tokens[train])} | {
        -1: fallback
    }


def token_baseline_accuracy(mapping: dict[int, int], tokens: np.ndarray, y: np.ndarray) -> float:
    predicted = np.array([mapping.get(int(t), mapping[-1]) for t in tokens])
    return float(np.mean(predicted == y))


def probe_layers(
    probe_states: str,
    test_states: dict[int, str],
    fit_length: int,
    config: ProbeConfig,
    control: bool = True,
) -> list[dict]:
    """Fit a probe per (layer, target) on ``probe_states``; score it on held-out probe
    sequences (``split="probe"``) and, unchanged, on the states of each test length
    (``split="test"``: the probe's readout at lengths it was not fit on). Every row also
    carries the majority-class and the current-token baselines and, with ``control``, the
    control-task accuracy and selectivity of the same probe. The control task doubles the
    fits; untrained twins go without it, because only their probe accuracy is read
    (:func:`with_baselines`).
    """
    from statelayers.measure.states import TARGET_COLUMNS, read_layers

    tests = {length: dict(read_layers(path)) for length, path in test_states.items()}
    n_types = 1 + max(int(layers[0]["token"].max()) for layers in tests.values()) if tests else 0
    rows = []
    for layer, columns in read_layers(probe_states):
        train, test = sequence_split(columns["seq_id"], config)
        tokens = columns["token"].astype(np.int64)
        n_types = max(n_types, 1 + int(tokens.max()))
        for target in (t for t in TARGET_COLUMNS if t in columns):
            y = columns[target]
            probe, scores = fit_probe(columns["vector"], y, columns["seq_id"], config)
            by_token = token_baseline(tokens, y, train)
            scores["token_baseline"] = token_baseline_accuracy(by_token, tokens[test], y[test])
            if control:
                control_map = control_labels(n_types, y, config.seed)
                control_probe, control_scores = fit_probe(
                    columns["vector"], control_map[tokens], columns["seq_id"], config
                )
                scores["control_accuracy"] = control_scores["probe_accuracy"]
                scores["selectivity"] = scores["probe_accuracy"] - scores["control_accuracy"]
            rows.append(
                {"layer": layer, "target": target, "split": "probe", "eval_length": fit_length, **scores}
            )
            for length, layers in tests.items():
                X, y_test, tokens_test = (layers[layer][c] for c in ("vector", target, "token"))
                accuracy = float(probe.score(X, y_test))
                row = {
                    "layer": layer,
                    "target": target,
                    "split": "test",
                    "eval_length": length,
                    "probe_accuracy": accuracy,
                    "train_accuracy": scores["train_accuracy"],
                    "majority_baseline": float(np.mean(y_test == probe.majority_class_)),
                    "token_baseline": token_baseline_accuracy(by_token, tokens_test, y_test),
                }
                if control:
                    row["control_accuracy"] = float(
                        control_probe.score(X, control_map[tokens_test.astype(np.int64)])
                    )
                    row["selectivity"] = accuracy - row["control_accuracy"]
                rows.append(row | {"n_train": scores["n_train"], "n_test": len(y_test)})
    return rows


PROBE_KEYS = ["arch", "task", "seed", "layer", "target", "split", "eval_length"]
"""One probe row per run, layer, target and readout."""


def with_baselines(probes: pd.DataFrame, untrained: pd.DataFrame) -> pd.DataFrame:
    """The trained runs' probe rows with ``untrained_accuracy`` (the probe row of the same
    run, layer, target and readout on the untrained twin) and the gains over it and over
    ``token_baseline``. Every row at a length the twins were read at needs its twin's;
    at other lengths the twin columns are empty."""
    twin = untrained[PROBE_KEYS + ["probe_accuracy"]].rename(columns={"probe_accuracy": "untrained_accuracy"})
    table = probes.merge(twin, on=PROBE_KEYS, how="left", validate="one_to_one")
    missing = table["untrained_accuracy"].isna() & table["eval_length"].isin(untrained["eval_length"])
    if missing.any():
        first = table.loc[missing, PROBE_KEYS].iloc[0].to_dict()
        raise ValueError(f"{int(missing.sum())} probe rows have no untrained twin, e.g. {first}")
    return table.assign(
        gain_over_untrained=table["probe_accuracy"] - table["untrained_accuracy"],
        gain_over_token=table["probe_accuracy"] - table["token_baseline"],
    )
