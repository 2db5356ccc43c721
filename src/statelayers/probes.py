"""Per-layer linear probes on frozen hidden states.

A probe is scikit-learn's multinomial logistic regression on standardised states.
Train and test tokens are split by sequence (``GroupShuffleSplit``), so no sequence
contributes to both. The majority baseline is the test accuracy of always predicting
the most frequent training label.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GroupShuffleSplit
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import StandardScaler


@dataclass(frozen=True)
class ProbeConfig:
    C: float = 1.0
    max_iter: int = 200
    test_fraction: float = 0.25
    seed: int = 0


def make_probe(config: ProbeConfig) -> Pipeline:
    return make_pipeline(StandardScaler(), LogisticRegression(C=config.C, max_iter=config.max_iter))


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
    probe_states: str, test_states: dict[int, str], fit_length: int, config: ProbeConfig
) -> list[dict]:
    """Fit a probe per (layer, target) on ``probe_states``; score it on held-out probe
    sequences (``split="probe"``) and, unchanged, on the states of each test length
    (``split="test"``: the probe's readout at lengths it was not fit on). Every row also
    carries the majority-class and the current-token baselines.
    """
    from statelayers.states import TARGET_COLUMNS, read_layers

    tests = {length: dict(read_layers(path)) for length, path in test_states.items()}
    rows = []
    for layer, columns in read_layers(probe_states):
        train, test = sequence_split(columns["seq_id"], config)
        for target in (t for t in TARGET_COLUMNS if t in columns):
            probe, scores = fit_probe(columns["vector"], columns[target], columns["seq_id"], config)
            by_token = token_baseline(columns["token"], columns[target], train)
            scores["token_baseline"] = token_baseline_accuracy(
                by_token, columns["token"][test], columns[target][test]
            )
            rows.append(
                {"layer": layer, "target": target, "split": "probe", "eval_length": fit_length, **scores}
            )
            for length, layers in tests.items():
                X, y, tokens = layers[layer]["vector"], layers[layer][target], layers[layer]["token"]
                rows.append(
                    {
                        "layer": layer,
                        "target": target,
                        "split": "test",
                        "eval_length": length,
                        "probe_accuracy": float(probe.score(X, y)),
                        "train_accuracy": scores["train_accuracy"],
                        "majority_baseline": float(np.mean(y == probe.majority_class_)),
                        "token_baseline": token_baseline_accuracy(by_token, tokens, y),
                        "n_train": scores["n_train"],
                        "n_test": len(y),
                    }
                )
    return rows
