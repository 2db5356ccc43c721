"""Corrupted pairs follow the task rules; patches fire where they claim; the batched,
resumed patching equals one plain forward per (pair, tap, position)."""

import numpy as np
import pandas as pd
import pytest
import torch

from statelayers.measure.patching import PositionPatch, corrupted_pairs, patching_rows
from statelayers.models.spec import ModelSpec
from statelayers.models.tagger import build_model
from statelayers.tasks import formal

TINY = {"gru": {}, "transformer": {"heads": 2}, "mamba": {"state_size": 4}}
DYCK = {"k": 3, "max_depth": 4, "open_prob": 0.5}


def tiny(arch: str, task: str, params=None, n_layers: int = 2, start_token: bool = False) -> torch.nn.Module:
    """An untrained tagger whose head is scaled up, so logit gaps are far above rounding."""
    spec = formal.task_spec(task, params)
    torch.manual_seed(0)
    model = build_model(
        ModelSpec(
            arch,
            spec.vocab_size,
            spec.num_classes,
            d_model=16,
            n_layers=n_layers,
            options=TINY[arch],
            start_token=start_token,
        )
    ).eval()
    with torch.no_grad():
        model.head.weight.mul_(100)
    return model


def reference_labels(task: str, sequence, k: int = 3) -> list[int]:
    """Labels of one sequence, token by token, from the task's definition (no shared tables)."""
    labels = []
    if task == "parity":
        bit = 0
        for x in sequence:
            bit ^= int(x)
            labels.append(bit)
    elif task == "s3":
        state = (0, 1, 2)
        for x in sequence:
            p = formal.S3_ELEMENTS[x]
            state = tuple(p[state[i]] for i in range(3))  # x_t after everything before it
            labels.append(formal.S3_ELEMENTS.index(state))
    else:
        stack = []
        for x in sequence:
            if x < k:
                stack.append(int(x))
            else:
                assert stack and stack[-1] == x - k, f"ill-formed: {list(sequence)}"
                stack.pop()
            labels.append(stack[-1] + 1 if stack else 0)
    return labels


def make_pairs(task: str, params=None, n: int = 60, length: int = 12, n_pairs: int = 40, earliest: int = 3):
    rng = np.random.default_rng(1)
    data = formal.generate(task, n, length, rng, params)
    return data, corrupted_pairs(task, data["tokens"], data["labels"], params, n_pairs, earliest, rng)


@pytest.mark.parametrize("task, params", [("parity", None), ("s3", None), ("dyck", DYCK)])
def test_pairs_differ_in_one_token_and_in_the_label_at_the_metric_position(task, params):
    data, pairs = make_pairs(task, params)
    assert 0 < len(pairs) <= 40
    np.testing.assert_array_equal(pairs.clean, data["tokens"][pairs.source])
    assert (np.diff(pairs.source) > 0).all()
    assert (pairs.corrupt_position >= 3).all()
    assert (pairs.metric_position - pairs.corrupt_position >= 1).all()
    for i in range(len(pairs)):
        clean, corrupted = pairs.clean[i], pairs.corrupted[i]
        s, c = pairs.metric_position[i], pairs.corrupt_position[i]
        np.testing.assert_array_equal(np.flatnonzero(clean[: s + 1] != corrupted[: s + 1]), [c])
        clean_ref, corrupted_ref = reference_labels(task, clean), reference_labels(task, corrupted)
        assert pairs.clean_labels[i] == clean_ref[s] != corrupted_ref[s] == pairs.corrupted_labels[i]
    if task == "dyck":
        k = params["k"]
        changed = pairs.clean != pairs.corrupted
        assert changed.sum(axis=1).max() == 2 and changed.sum(axis=1).min() >= 1  # bracket (+ its close)
        for i, c in enumerate(pairs.corrupt_position):
            assert pairs.clean[i, c] < k and pairs.corrupted[i, c] < k  # an opening bracket, retyped
            assert (pairs.clean[i, 3:c] >= k).all()  # the first one at or after `earliest`
    else:
        # One bijective step changes every later label, so every sequence makes a pair.
        assert len(pairs) == 40
        assert (pairs.corrupt_position == 3).all() and (pairs.metric_position == 11).all()


def test_dyck_corruption_retypes_the_matching_close_just_after_the_metric_position():
    _, pairs = make_pairs("dyck", DYCK, n=200, n_pairs=200)
    closed = pairs.metric_position < pairs.clean.shape[1] - 1
    assert closed.any() and (~closed).any()
    for i in np.flatnonzero(closed):
        s, c = pairs.metric_position[i], pairs.corrupt_position[i]
        assert pairs.corrupted[i, s + 1] == DYCK["k"] + pairs.corrupted[i, c]
        assert np.flatnonzero(pairs.clean[i] != pairs.corrupted[i]).tolist() == [c, s + 1]


def test_pairs_are_refused_where_undefined():
    tokens = np.zeros((3, 6), dtype=np.int64)
    with pytest.raises(ValueError, match="codedepth"):
        corrupted_pairs("codedepth", tokens, tokens, None, 2, 1, np.random.default_rng(0))
    data = formal.generate("parity", 5, 6, np.random.default_rng(0))
    with pytest.raises(ValueError, match="parity"):  # no later position to measure at
        corrupted_pairs("parity", data["tokens"], data["labels"], None, 2, 5, np.random.default_rng(0))
    with pytest.raises(ValueError, match="parity: the labels disagree"):
        corrupted_pairs("parity", data["tokens"], 1 - data["labels"], None, 2, 1, np.random.default_rng(0))
    one_type = formal.generate("dyck", 5, 6, np.random.default_rng(0), {"k": 1, "max_depth": 4, "open_prob": 0.5})
    with pytest.raises(ValueError, match="dyck"):
        corrupted_pairs(
            "dyck", one_type["tokens"], one_type["labels"], {"k": 1}, 2, 0, np.random.default_rng(0)
        )


@pytest.mark.parametrize("arch", TINY)
def test_a_position_patch_writes_exactly_its_positions(arch):
    model = tiny(arch, "s3")
    tokens = torch.randint(0, 6, (3, 9))
    positions = torch.tensor([0, 4, 8])
    with torch.no_grad():
        clean_logits, clean = model(tokens, return_states=True)
        for tap in range(len(clean)):
            donor = torch.randn(3, 16)
            logits, patched = model(tokens, edits={tap: PositionPatch(donor, positions)}, return_states=True)
            for i, t in enumerate(positions.tolist()):
                torch.testing.assert_close(patched[tap][i, t], donor[i])
                others = [p for p in range(9) if p != t]
                torch.testing.assert_close(patched[tap][i, others], clean[tap][i, others])
                assert not torch.allclose(logits[i, t], clean_logits[i, t])  # the model saw it
            for earlier in range(tap):
                torch.testing.assert_close(patched[earlier], clean[earlier])


@pytest.mark.parametrize("arch", TINY)
def test_the_embedding_at_the_corruption_and_the_last_tap_at_the_metric_carry_everything(arch):
    model = tiny(arch, "s3")
    _, pairs = make_pairs("s3", n=8, length=8, n_pairs=8, earliest=3)
    rows = pd.DataFrame(patching_rows(model, pairs, batch_size=7))
    assert set(rows["position"]) == set(range(8)) and set(rows["layer"]) == {0, 1, 2}
    assert (rows["clean_metric"] - rows["corrupted_metric"]).abs().min() > 0.05
    for direction in ("denoising", "noising"):
        part = rows[rows["direction"] == direction].set_index(["layer", "position"])["fraction"]
        # The inputs differ in the embedding at position 3 only: patching it makes them equal.
        assert part[(0, 3)] == pytest.approx(1, abs=1e-5)
        assert np.allclose(part.loc[0].drop(3), 0, atol=1e-5)
        # The head reads the last tap position by position.
        assert part[(2, 7)] == pytest.approx(1, abs=1e-5)
        assert np.allclose(part.loc[2].drop(7), 0, atol=1e-5)
        # Before the corruption the two runs agree at every tap (causality).
        assert np.allclose(part[part.index.get_level_values("position") < 3], 0, atol=1e-5)


def test_positions_after_the_metric_position_are_excluded():
    model = tiny("gru", "dyck", DYCK)
    _, pairs = make_pairs("dyck", DYCK, n=40, n_pairs=12, earliest=1)
    assert len(set(pairs.metric_position)) > 2
    rows = pd.DataFrame(patching_rows(model, pairs, batch_size=8))
    assert rows["position"].max() == pairs.metric_position.max()
    for (_, position), n in rows.groupby(["layer", "position"])["n_pairs"].agg(["min", "max"]).iterrows():
        assert n["min"] == n["max"] == (pairs.metric_position >= position).sum()
    assert len(rows) == 3 * 2 * (pairs.metric_position.max() + 1)


def slow_reference(model, pairs) -> pd.DataFrame:
    """One plain forward (no resume, no batching) per (pair, tap, position, direction)."""
    m = {}
    states = {}

    def metric(logits, i):
        at = logits[0, pairs.metric_position[i]]
        return float(at[pairs.clean_labels[i]] - at[pairs.corrupted_labels[i]])

    with torch.no_grad():
        for name in ("clean", "corrupted"):
            for i, seq in enumerate(getattr(pairs, name)):
                logits, states[name, i] = model(torch.as_tensor(seq[None]), return_states=True)
                m[name, i] = metric(logits, i)
        rows = []
        for tap in range(len(states["clean", 0])):
            for direction, into, donor in (
                ("denoising", "corrupted", "clean"),
                ("noising", "clean", "corrupted"),
            ):
                for t in range(pairs.clean.shape[1]):
                    who = [i for i in range(len(pairs)) if t <= pairs.metric_position[i]]
                    patched = []
                    for i in who:

                        def put(hidden, t=t, value=states[donor, i][tap][0, t]):
                            hidden = hidden.clone()
                            hidden[0, t] = value
                            return hidden

                        logits = model(torch.as_tensor(getattr(pairs, into)[i][None]), edits={tap: put})
                        patched.append(metric(logits, i))
                    if who:
                        clean = np.mean([m["clean", i] for i in who])
                        corrupted = np.mean([m["corrupted", i] for i in who])
                        rows.append(
                            {
                                "layer": tap,
                                "position": t,
                                "direction": direction,
                                "mean_patched_metric": np.mean(patched),
                                "clean_metric": clean,
                                "corrupted_metric": corrupted,
                                "n_pairs": len(who),
                            }
                        )
    return pd.DataFrame(rows)


@pytest.mark.parametrize("arch, start_token", [*((arch, False) for arch in TINY), ("transformer", True)])
def test_batched_resumed_patching_equals_one_plain_forward_per_patch(arch, start_token):
    model = tiny(arch, "dyck", DYCK, start_token=start_token)
    _, pairs = make_pairs("dyck", DYCK, n=20, length=9, n_pairs=3, earliest=1)
    fast = pd.DataFrame(patching_rows(model, pairs, batch_size=5))
    slow = slow_reference(model, pairs)
    key = ["layer", "position", "direction"]
    merged = fast.merge(slow, on=key, suffixes=("", "_slow"), validate="one_to_one")
    assert len(merged) == len(fast) == len(slow)
    for column in ("mean_patched_metric", "clean_metric", "corrupted_metric", "n_pairs"):
        np.testing.assert_allclose(merged[column], merged[f"{column}_slow"], rtol=1e-5, atol=1e-4)
    gap = merged["clean_metric"] - merged["corrupted_metric"]
    moved = np.where(
        merged["direction"] == "denoising",
        merged["mean_patched_metric"] - merged["corrupted_metric"],
        merged["clean_metric"] - merged["mean_patched_metric"],
    )
    np.testing.assert_allclose(merged["fraction"], moved / gap, rtol=1e-9)
    assert merged["fraction"].abs().gt(1e-3).any()  # some patch mattered, so a no-op edit would fail


def test_patching_heatmaps_writes_a_figure(tmp_path):
    from statelayers.report.figures import patching_heatmaps

    frames = []
    for arch in ("gru", "mamba"):
        for task, params in (("s3", None), ("dyck", DYCK)):
            _, pairs = make_pairs(task, params, n=10, length=6, n_pairs=2, earliest=1)
            rows = pd.DataFrame(patching_rows(tiny(arch, task, params), pairs))
            for seed in (0, 1):
                frames.append(rows.assign(arch=arch, task=task, seed=seed))
    path = tmp_path / "patching.png"
    patching_heatmaps(pd.concat(frames), [path])
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 10_000
