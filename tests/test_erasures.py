"""Erasures remove what they claim, fire inside the model, and leave the rest alone."""

import numpy as np
import pytest
import torch

from statelayers.measure.erasures import (
    Erasure,
    erasures,
    inlp,
    leace,
    orthonormal_basis,
    probe_directions,
    projection,
    random_subspace,
)
from statelayers.measure.probes import fit_probe
from statelayers.models.spec import ModelSpec
from statelayers.models.tagger import build_model
from study_config import erasure_config, probe_config


def separable(n_seq=80, length=10, d=12, classes=3, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, classes, n_seq * length)
    X = rng.normal(size=(len(y), d)) + rng.normal(size=(classes, d))[y] * 3 + 5  # off-centre on purpose
    return X, y, np.repeat(np.arange(n_seq), length)


def test_projection_leaves_no_component_along_the_subspace():
    rng = np.random.default_rng(0)
    directions = rng.normal(size=(3, 10))
    erasure = projection("probe", directions)
    X = rng.normal(size=(50, 10))
    erased = erasure.apply_numpy(X)
    assert erasure.rank == 3
    np.testing.assert_allclose(erased @ directions.T, 0, atol=1e-10)
    # ...and changes nothing orthogonal to it.
    q = orthonormal_basis(directions)
    np.testing.assert_allclose(erased, X - X @ q @ q.T, atol=1e-10)


def test_rank_zero_erasure_is_the_identity():
    erasure = projection("probe", np.zeros((0, 6)))
    h = torch.randn(2, 3, 6)
    assert erasure.rank == 0
    torch.testing.assert_close(erasure(h), h)


def test_probe_directions_make_the_probe_blind():
    X, y, groups = separable(classes=2)
    probe, scores = fit_probe(X, y, groups, probe_config())
    assert scores["probe_accuracy"] > 0.95
    erased = projection("probe", probe_directions(probe)).apply_numpy(X)
    assert np.ptp(probe.decision_function(erased)) < 1e-8


def test_leace_leaves_nothing_linearly_decodable():
    X, y, groups = separable()
    erased = leace(X, y).apply_numpy(X)
    _, scores = fit_probe(erased, y, groups, probe_config())
    assert scores["probe_accuracy"] < scores["majority_baseline"] + 0.06


def shared_noise(n_seq=200, length=10, d=20, classes=4, seed=0):
    """Class means in coordinates 0-2 under strong noise that coordinates 3-5 repeat.

    The best single probe reads the difference of the two blocks, which cancels the
    shared noise; erasing its directions leaves their sum, which still carries the class
    (under twice the noise), so one INLP iteration leaves the task decodable and the
    next ones remove it.
    """
    rng = np.random.default_rng(seed)
    y = rng.integers(0, classes, n_seq * length)
    noise = rng.normal(size=(len(y), classes - 1)) * 2
    X = rng.normal(size=(len(y), d)) + 5  # off-centre on purpose
    X[:, : classes - 1] += rng.normal(size=(classes, classes - 1))[y] * 4 + noise
    X[:, classes - 1 : 2 * (classes - 1)] += noise
    return X, y, np.repeat(np.arange(n_seq), length)


def test_inlp_lowers_decodability_with_iterations():
    X, y, groups = shared_noise()
    one = inlp(X, y, groups, 1, probe_config())
    many = inlp(X, y, groups, 4, probe_config())
    scores = [fit_probe(e.apply_numpy(X), y, groups, probe_config())[1] for e in (one, many)]
    acc, chance = [s["probe_accuracy"] for s in scores], scores[0]["majority_baseline"]
    assert many.rank == 4 * one.rank == 12
    assert acc[0] > chance + 0.25  # one iteration leaves the task decodable
    assert acc[1] < acc[0] - 0.25  # four remove it...
    assert acc[1] < chance + 0.05  # ...down to the majority class


def test_inlp_reusing_the_layer_probe_equals_fitting_it_again():
    X, y, groups = separable(d=20, classes=4)
    probe, _ = fit_probe(X, y, groups, probe_config())
    fresh = inlp(X, y, groups, 3, probe_config())
    reused = inlp(X, y, groups, 3, probe_config(), first_probe=probe)
    np.testing.assert_allclose(reused.left.numpy(), fresh.left.numpy(), atol=1e-10)


def test_random_subspaces_are_orthonormal_and_differ():
    rng = np.random.default_rng(0)
    a, b = random_subspace(16, 4, rng), random_subspace(16, 4, rng)
    np.testing.assert_allclose(a @ a.T, np.eye(4), atol=1e-10)
    assert not np.allclose(a, b)


def test_every_method_and_its_controls_are_generated():
    X, y, groups = separable(classes=3)
    probe, _ = fit_probe(X, y, groups, probe_config())
    config = erasure_config(pca_k=(1, 4), random_draws=2, inlp_iterations=2)
    made = list(erasures(X, y, groups, probe, config, probe_config(), np.random.default_rng(0)))
    methods = [e.method for e in made]
    assert methods[:5] == ["probe", "pca", "pca", "inlp", "leace"]
    ranks = {e.rank for e in made if e.method != "random"}  # probe 2, pca 1 and 4, inlp 4, leace 2
    assert next(e.rank for e in made if e.method == "leace") == 2  # 3 classes span 2 directions
    assert sorted((e.rank, e.draw) for e in made if e.method == "random") == sorted(
        (r, d) for r in ranks for d in range(2)
    )


def test_an_erasure_inside_the_model_changes_exactly_its_layer():
    model = build_model(ModelSpec("mamba", 4, 3, d_model=8, n_layers=3, options={"state_size": 4})).eval()
    tokens = torch.randint(0, 4, (2, 11))
    _, clean = model(tokens, return_states=True)
    erasure = projection("pca", np.random.default_rng(1).normal(size=(2, 8)))
    _, edited = model(tokens, edits={2: erasure}, return_states=True)
    torch.testing.assert_close(edited[1], clean[1])
    torch.testing.assert_close(edited[2], erasure(clean[2]))
    assert torch.allclose(edited[2] @ erasure.left.float(), torch.zeros(2, 11, 2), atol=1e-5)
    assert not torch.allclose(edited[3], clean[3])


def test_erasure_is_an_affine_map_like_leace():
    X, y, _ = separable()
    erasure = leace(X, y)
    from concept_erasure import LeaceEraser

    reference = LeaceEraser.fit(torch.as_tensor(X), torch.nn.functional.one_hot(torch.as_tensor(y)).double())
    torch.testing.assert_close(erasure(torch.as_tensor(X)), reference(torch.as_tensor(X)))
    assert isinstance(erasure, Erasure)


def test_fit_subsample_takes_whole_sequences_up_to_the_budget():
    from statelayers.measure.erasures import sequence_subsample

    groups = np.repeat(np.arange(50), 10)
    kept = sequence_subsample(groups, 205, seed=0)
    assert len(kept) == 200
    assert all(np.sum(groups[kept] == g) == 10 for g in np.unique(groups[kept]))
    np.testing.assert_array_equal(kept, sequence_subsample(groups, 205, seed=0))
    assert len(sequence_subsample(groups, 10_000, seed=0)) == 500


@pytest.mark.parametrize("start_token", [False, True])
def test_edited_predictions_from_clean_states_equal_a_full_edited_pass(start_token):
    from statelayers.measure.erasures import edited_predictions
    from statelayers.models.inference import predict

    torch.manual_seed(0)
    model = build_model(ModelSpec("gru", 4, 3, d_model=8, n_layers=3, start_token=start_token)).eval()
    torch.nn.init.zeros_(model.head.bias)  # else the bias alone decides every token of a fresh model
    rng = np.random.default_rng(0)
    tokens, labels = rng.integers(0, 4, (7, 13)), rng.integers(0, 3, (7, 13))
    data = {"tokens": tokens, "labels": labels}
    before, clean = predict(model, tokens, keep_states=len(tokens))
    changed = 0
    for layer in range(4):
        erasure = Erasure("flip", 8, torch.eye(8), 2 * torch.eye(8), torch.zeros(8))  # h -> -h
        expected = predict(model, tokens, edits={layer: erasure})[0]
        np.testing.assert_array_equal(edited_predictions(model, data, clean, layer, erasure, batch_size=3), expected)
        changed += (expected != before).any()
    # The flip at the last tap changes predictions, so there a misaligned batch of
    # replayed states could not go unnoticed.
    assert changed >= 1


def test_a_drop_s_standard_error_takes_the_sequence_as_its_unit():
    from statelayers.measure.erasures import drop_standard_error

    labels = np.zeros((4, 10), dtype=int)
    before = labels.copy()
    after = labels.copy()
    after[0, :] = 1  # one sequence loses every token, three lose none
    per_sequence = np.array([1.0, 0.0, 0.0, 0.0])
    assert drop_standard_error(before, after, labels) == pytest.approx(per_sequence.std(ddof=1) / 2)
    # The same 10 wrong tokens spread over the four sequences vary less between sequences.
    spread = labels.copy()
    spread[:, :2] = 1
    spread[0, 2:4] = 1
    assert drop_standard_error(before, spread, labels) < drop_standard_error(before, after, labels)
    assert np.isnan(drop_standard_error(before[:1], after[:1], labels[:1]))
