"""Probes on synthetic data with known answers; the states file round-trips exactly."""

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
import torch

from statelayers import files
from statelayers.measure.probes import (
    control_labels,
    fit_probe,
    probe_layers,
    sequence_split,
    with_baselines,
)
from statelayers.measure.states import layer_states, read_layers, states_table, write_states
from statelayers.models.spec import ModelSpec
from statelayers.models.tagger import build_model
from statelayers.tasks.data import make_split, to_arrays
from study_config import probe_config


def synthetic(n_seq=60, length=20, d=8, classes=3, separable=True, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, classes, n_seq * length)
    centres = rng.normal(size=(classes, d)) * 4
    X = rng.normal(size=(len(y), d)) + (centres[y] if separable else 0)
    return X, y, np.repeat(np.arange(n_seq), length)


def test_probe_reads_a_linearly_separable_variable():
    X, y, groups = synthetic()
    _, scores = fit_probe(X, y, groups, probe_config())
    assert scores["probe_accuracy"] > 0.97
    assert scores["majority_baseline"] < 0.5


def curved(n_seq=40, length=40, d=56, classes=11, seed=0):
    """An ordinal label (like a depth) read off a curve through ``d`` sinusoidal features:
    nearly separable, with large weights, which L-BFGS approaches slowly."""
    rng = np.random.default_rng(seed)
    t = rng.uniform(0, 1, n_seq * length)
    y = np.minimum((t * classes).astype(int), classes - 1)
    X = np.sin(np.outer(t, rng.uniform(0.5, 6, d)) + rng.uniform(0, 6.3, d))
    return X + 0.01 * rng.normal(size=X.shape), y, np.repeat(np.arange(n_seq), length)


def test_the_default_probe_converges_in_a_tenth_of_the_iterations_lbfgs_needs_to_the_same_optimum():
    X, y, groups = curved()
    reference, long = fit_probe(X, y, groups, probe_config(solver="lbfgs", max_iter=5000))
    default, scores = fit_probe(X, y, groups, probe_config())
    assert long["converged"] and scores["converged"]
    assert reference[-1].n_iter_.max() > 100 and default[-1].n_iter_.max() <= 20
    # One strictly convex objective: the same optimum, up to the solvers' tolerances (the
    # objective is flat along some weight directions, so compare what the probe predicts).
    np.testing.assert_allclose(default.predict_proba(X), reference.predict_proba(X), atol=0.02)
    assert abs(scores["probe_accuracy"] - long["probe_accuracy"]) <= 0.005


def test_probe_is_at_chance_on_noise():
    X, y, groups = synthetic(separable=False)
    _, scores = fit_probe(X, y, groups, probe_config())
    assert scores["probe_accuracy"] < 0.45


def test_split_keeps_each_sequence_on_one_side():
    groups = np.repeat(np.arange(40), 7)
    train, test = sequence_split(groups, probe_config(test_fraction=0.25))
    assert not set(groups[train]) & set(groups[test])
    assert len(set(groups[test])) == 10


@pytest.fixture
def dyck_states(tmp_path):
    model = build_model(ModelSpec("gru", 4, 3, d_model=8, n_layers=2)).eval()
    data = to_arrays(
        make_split(
            "dyck", "probe", 12, 9, seed=0, task_params={"k": 2, "max_depth": 4, "open_prob": 0.5}
        ).to_pandas()
    )
    path = tmp_path / "probe_L9.parquet"
    write_states(model, data, path)
    return model, data, path


def test_states_file_round_trips(dyck_states):
    model, data, path = dyck_states
    expected = layer_states(model, data["tokens"])
    table = pq.read_table(path)
    assert table.column_names == ["layer", "seq_id", "pos", "token", "labels", "depth", "vector"]
    assert table.num_rows == 3 * 12 * 9
    for layer, columns in read_layers(path):
        np.testing.assert_array_equal(columns["vector"], expected[layer].reshape(-1, 8))
        np.testing.assert_array_equal(columns["labels"], data["labels"].reshape(-1))
        np.testing.assert_array_equal(columns["depth"], data["depth"].reshape(-1))
        np.testing.assert_array_equal(columns["token"], data["tokens"].reshape(-1))
        assert columns["pos"][:9].tolist() == list(range(9))


def test_probe_layers_reports_every_layer_target_and_length(dyck_states):
    _, _, path = dyck_states
    rows = probe_layers(str(path), {9: str(path)}, fit_length=9, config=probe_config(max_iter=50))
    keys = {(r["layer"], r["target"], r["split"]) for r in rows}
    assert keys == {
        (layer, target, split)
        for layer in range(3)
        for target in ("labels", "depth")
        for split in ("probe", "test")
    }
    assert all(0 <= r["probe_accuracy"] <= 1 for r in rows)


def test_without_the_control_task_the_rows_keep_every_probe_value_and_drop_only_the_control_columns(
    dyck_states, monkeypatch
):
    """The untrained twins' probes skip the control task: the same probes, half the fits."""
    _, _, path = dyck_states
    config = probe_config(max_iter=50)
    fits = []
    counted = lambda *args: fits.append(1) or fit_probe(*args)  # noqa: E731
    monkeypatch.setattr("statelayers.measure.probes.fit_probe", counted)
    full = pd.DataFrame(probe_layers(str(path), {9: str(path)}, fit_length=9, config=config))
    full_fits = len(fits)
    bare = pd.DataFrame(probe_layers(str(path), {9: str(path)}, fit_length=9, config=config, control=False))
    assert full_fits == 2 * (len(fits) - full_fits) == 2 * 3 * 2  # 3 layers x 2 targets, control or not
    assert {"control_accuracy", "selectivity"} <= set(full.columns)
    assert list(bare.columns) == [c for c in full.columns if c not in ("control_accuracy", "selectivity")]
    pd.testing.assert_frame_equal(bare, full[bare.columns])


def test_embedding_layer_probe_reads_the_current_token(tmp_path):
    """Layer 0 is the embedding: the current token is linearly readable there exactly."""
    model = build_model(ModelSpec("lstm", 6, 6, d_model=16, n_layers=1)).eval()
    data = to_arrays(make_split("s3", "probe", 40, 10, seed=1).to_pandas())
    data["labels"] = data["tokens"]
    write_states(model, data, tmp_path / "s.parquet")
    rows = probe_layers(str(tmp_path / "s.parquet"), {}, fit_length=10, config=probe_config())
    assert rows[0]["layer"] == 0 and rows[0]["probe_accuracy"] == 1.0
    torch.manual_seed(0)


def test_control_task_gives_each_token_type_one_label_from_the_label_distribution():
    y = np.array([0] * 900 + [1] * 100)
    control = control_labels(2000, y, seed=3)
    np.testing.assert_array_equal(control, control_labels(2000, y, seed=3))
    assert set(control) <= {0, 1}
    assert 0.85 < np.mean(control == 0) < 0.95  # drawn from the 90/10 label distribution


def test_selectivity_separates_token_identity_from_the_target(tmp_path):
    """Layer 0 holds only the current token, layer 1 only the (token-independent) label:
    the control task is solved at layer 0 and not at layer 1, so only layer 1 is selective."""
    rng = np.random.default_rng(0)
    n, length, d, types = 60, 20, 12, 6
    tokens, labels = rng.integers(0, types, (n, length)), rng.integers(0, 3, (n, length))
    token_code, label_code = rng.normal(size=(types, d)) * 3, rng.normal(size=(3, d)) * 3
    noise = rng.normal(size=(2, n, length, d))
    states = np.stack([token_code[tokens], label_code[labels]]) + noise
    data = {"seq_id": np.arange(n), "tokens": tokens, "labels": labels}
    files.write_parquet(states_table(states.astype(np.float32), data), tmp_path / "s.parquet")
    rows = probe_layers(str(tmp_path / "s.parquet"), {}, fit_length=length, config=probe_config())
    token_layer, label_layer = rows
    assert token_layer["control_accuracy"] > 0.95 and token_layer["selectivity"] < 0.1
    assert label_layer["probe_accuracy"] > 0.95 and label_layer["control_accuracy"] < 0.75
    assert label_layer["selectivity"] > 0.3


def probe_table(states, tokens, labels, path):
    """The probe rows of synthetic ``states`` (layer, sequence, position, d) as one run's."""
    data = {"seq_id": np.arange(len(tokens)), "tokens": tokens, "labels": labels}
    files.write_parquet(states_table(states.astype(np.float32), data), path)
    rows = probe_layers(str(path), {}, fit_length=tokens.shape[1], config=probe_config())
    return pd.DataFrame(rows).assign(arch="gru", task="s3", seed=0)


def test_a_layer_that_holds_only_the_token_gains_nothing_over_its_untrained_twin(tmp_path):
    """Layer 0 holds only the current token, in the trained run and (with another code) in
    its twin: the twin reads the label as well from it, so the gain is exactly 0. Layer 1
    of the trained run holds the label, which its twin's layer 1 (noise) does not."""
    rng = np.random.default_rng(1)
    n, length, d, types = 60, 20, 12, 6
    tokens = rng.integers(0, types, (n, length))
    labels = np.where(rng.random((n, length)) < 0.7, tokens % 3, rng.integers(0, 3, (n, length)))
    trained_code, twin_code, label_code = (rng.normal(size=(k, d)) * 3 for k in (types, types, 3))
    trained = np.stack([trained_code[tokens], label_code[labels] + rng.normal(size=(n, length, d))])
    twin = np.stack([twin_code[tokens], rng.normal(size=(n, length, d))])
    table = with_baselines(
        probe_table(trained, tokens, labels, tmp_path / "trained.parquet"),
        probe_table(twin, tokens, labels, tmp_path / "twin.parquet"),
    ).set_index("layer")
    token_layer, label_layer = table.loc[0], table.loc[1]
    assert token_layer["untrained_accuracy"] == token_layer["probe_accuracy"]
    assert token_layer["gain_over_untrained"] == 0.0
    assert abs(token_layer["gain_over_token"]) < 0.02  # the token's majority label is all it offers
    assert label_layer["probe_accuracy"] > 0.95 and label_layer["gain_over_untrained"] > 0.2
    assert label_layer["gain_over_token"] == label_layer["probe_accuracy"] - label_layer["token_baseline"]


def test_a_probe_row_without_its_untrained_twin_is_an_error_at_the_twins_lengths_only(tmp_path):
    rng = np.random.default_rng(2)
    tokens, labels = rng.integers(0, 2, (20, 8)), rng.integers(0, 2, (20, 8))
    rows = probe_table(rng.normal(size=(2, 20, 8, 4)), tokens, labels, tmp_path / "s.parquet")
    with pytest.raises(ValueError, match="no untrained twin"):
        with_baselines(rows, rows[rows["layer"] == 0])
    longer = rows.assign(split="test", eval_length=16)  # a length the twins were not read at
    table = with_baselines(pd.concat([rows, longer], ignore_index=True), rows)
    assert (
        table.loc[table["eval_length"] == 16, ["untrained_accuracy", "gain_over_untrained"]]
        .isna()
        .all()
        .all()
    )
    assert (table.loc[table["eval_length"] == 8, "gain_over_untrained"] == 0).all()
