"""Verdict rules on synthetic tables built to reproduce, contradict, or leave no room for
each finding; every test names the sub-claim that decided, not only the verdict's word."""

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from statelayers.report.claims import Choices, check_claims, claims_markdown
from statelayers.report.claims.check import ROBUSTNESS_COLUMNS, SUBCLAIM_COLUMNS
from statelayers.report.claims.engine import (
    FRAGILE_BAND,
    LAYER_DIFFERENCE,
    LAYER_POSITION,
    MIN_SEEDS,
    NO_ROOM,
    TOKEN_ACCURACY,
    WHOLE_BLOCK_DIFFERENCE,
    WHOLE_BLOCK_POSITION,
    Finding,
    SubClaim,
)
from statelayers.report.claims.runs import learned_runs
from statelayers.report.stats import IntervalConfig

CONFIG = yaml.safe_load((Path(__file__).parents[1] / "config" / "config.yaml").read_text())
CHOICES = Choices(
    **{k: v for k, v in CONFIG["claims"].items() if k != "alternatives"},
    confidence=CONFIG["statistics"]["confidence"],
)
"""The decided analysis choices, as the claims rule passes them."""
ALTERNATIVES = CONFIG["claims"]["alternatives"]
GATE = CHOICES.learned_accuracy
ARCHS = ["transformer", "mamba", "mamba2", "lstm", "gru"]
SEEDS = [0, 1, 2, 3, 4, 5]  # six: a one-block difference of two layer positions needs them
TRAIN_LENGTH = 40
LENGTHS = [TRAIN_LENGTH, 80, 120]


def noisy(value, seed, scale=0.005):
    return float(np.clip(value + np.random.default_rng(seed).normal(0, scale), 0, 1))


def learned_everywhere(arch, task, seed):
    return None


def behaviour_table(accuracy, at_train=learned_everywhere, sequences=None):
    """``accuracy(arch, task) -> float`` token accuracy at the longer lengths, plus small
    seed noise; at the training length ``at_train(arch, task, seed)``, or where that is
    None at least 0.99 (the model learned its task). Sequence accuracy is the token
    accuracy to the power ``length / 4``, or ``sequences(arch, task)`` where given."""

    def value(a, t, s, n):
        if n == TRAIN_LENGTH:
            trained = at_train(a, t, s)
            target = max(accuracy(a, t), 0.99) if trained is None else trained
        else:
            target = accuracy(a, t)
        return 1.0 if target == 1.0 else noisy(target, s * 7 + n)

    rows = []
    for a in ARCHS:
        for t in ("parity", "s3", "dyck"):
            for s in SEEDS:
                for n in LENGTHS:
                    token = value(a, t, s, n)
                    sequence = token ** (n / 4) if sequences is None else noisy(sequences(a, t), s + n)
                    rows.append(
                        {"arch": a, "task": t, "seed": s, "eval_length": n, "token_accuracy": token,
                         "sequence_accuracy": sequence}  # fmt: skip
                    )
    return pd.DataFrame(rows)


def not_learned(runs, accuracy=0.55):
    """``at_train`` where the (arch, task) pairs of ``runs`` (all seeds, or the seeds
    given as a third element) stay at ``accuracy``."""
    keyed = {(r[0], r[1]): (r[2] if len(r) > 2 else SEEDS) for r in runs}
    return lambda a, t, s: accuracy if s in keyed.get((a, t), ()) else None


def paper_accuracy(arch, task):
    if arch in ("lstm", "gru"):
        return 1.0 if task != "dyck" else 0.99
    return {"mamba": 0.85, "mamba2": 0.85, "transformer": 0.6}[arch]


PAPER_PROFILES = {  # probe accuracy at embedding, blocks 1-4: the paper's numbers
    ("mamba", "parity"): [0.5, 0.55, 0.60, 0.71, 1.0],
    ("lstm", "parity"): [0.5, 0.55, 0.58, 0.65, 1.0],
    ("transformer", "parity"): [0.5, 0.55, 0.76, 0.98, 1.0],
    ("mamba", "dyck"): [0.5, 0.73, 1.0, 1.0, 1.0],
    ("lstm", "dyck"): [0.5, 0.70, 0.90, 1.0, 1.0],
    ("transformer", "dyck"): [0.5, 1.0, 1.0, 1.0, 1.0],
}
RISING_DYCK = {  # a Dyck reversal with room: the Transformer rises by block 2, the others later
    "transformer": [0.5, 0.9, 1.0, 1.0, 1.0],
    "mamba": [0.5, 0.6, 0.8, 1.0, 1.0],
    "lstm": [0.5, 0.6, 0.75, 1.0, 1.0],
}


def family(arch):
    return {"mamba2": "mamba", "gru": "lstm"}.get(arch, arch)


def paper_profile(arch, task):
    return PAPER_PROFILES[(family(arch), "parity" if task == "s3" else task)]


def study_profile(arch, task):
    """The paper's profiles, except a Dyck reversal the gain profile has room to show: on
    these every finding 1-5 holds under the decided choices."""
    return RISING_DYCK[family(arch)] if task == "dyck" else paper_profile(arch, task)


def probes_table(profile, untrained=lambda arch, task, layer: 0.5):
    """Label probes of every run (and the same profile as Dyck's depth target), with an
    untrained twin at ``untrained(arch, task, layer)`` and a token baseline at 0.5."""
    rows = []
    for a in ARCHS:
        for t in ("parity", "s3", "dyck"):
            for s in SEEDS:
                for layer, acc in enumerate(profile(a, t)):
                    accuracy = noisy(acc, s + layer, 0.003)
                    twin = noisy(untrained(a, t, layer), s + layer + 50, 0.003)
                    for target in ("labels", "depth") if t == "dyck" else ("labels",):
                        rows.append(
                            {"arch": a, "task": t, "seed": s, "target": target, "split": "probe",
                             "eval_length": 40, "layer": layer, "probe_accuracy": accuracy,
                             "untrained_accuracy": twin, "gain_over_untrained": accuracy - twin,
                             "token_baseline": 0.5, "gain_over_token": accuracy - 0.5}  # fmt: skip
                        )
    return pd.DataFrame(rows)


def erasure_tables(probe_drop, random_drop=0.01):
    """``probe_drop``: the drop of the probe-direction erasure, a number or ``f(arch, task)``."""
    drop_of = probe_drop if callable(probe_drop) else (lambda a, t: probe_drop)
    rows, readability = [], []
    for a in ARCHS:
        for t in ("parity", "s3", "dyck"):
            for s in SEEDS:
                readability.append({"arch": a, "task": t, "seed": s, "method": "probe", "best_probe_layer": 4})
                for n in LENGTHS:
                    key = {"arch": a, "task": t, "seed": s, "layer": 4, "rank": 1, "eval_length": n,
                           "accuracy_before": 0.95}  # fmt: skip
                    rows.append({**key, "method": "probe", "drop": noisy(drop_of(a, t), s + n, 0.02)})
                    rows += [
                        {**key, "method": "random", "drop": noisy(random_drop, s + n + draw, 0.005)}
                        for draw in range(2)
                    ]
    return pd.DataFrame(rows), pd.DataFrame(readability)


def run_check(behaviour, probes, erasures=None, readability=None, alternatives=None, **tables):
    return check_claims(
        behaviour, probes, erasures, readability, scale="synthetic", train_length=TRAIN_LENGTH,
        choices=CHOICES, alternatives=alternatives, **tables,
    )  # fmt: skip


def verdicts(behaviour, probes, erasures=None, readability=None):
    claims = run_check(behaviour, probes, erasures, readability).verdicts
    return dict(zip(claims["finding"], claims["verdict"])), claims


def rows(claims):
    return claims.set_index("finding")


def decided_rows(check, finding):
    sub = check.subclaims
    return sub[(sub["reading"] == "decided") & (sub["finding"] == finding)].set_index("subclaim")


def study(**changes):
    tables = {"behaviour": behaviour_table(paper_accuracy), "probes": probes_table(study_profile)}
    erasures, readability = erasure_tables(0.4)
    return run_check(**{**tables, "erasures": erasures, "readability": readability, **changes})


def test_tables_that_show_every_effect_with_room_reproduce_findings_1_to_5():
    check = study()
    found = dict(zip(check.verdicts["finding"], check.verdicts["verdict"]))
    assert [found[i] for i in range(1, 6)] == ["reproduced"] * 5, check.verdicts.to_string()
    assert found[6] == found[7] == "inconclusive"
    markdown = claims_markdown(check, TRAIN_LENGTH, GATE)
    assert "Claims check" in markdown and "| transformer | parity | 6 of 6 |" in markdown
    assert "Student t" in markdown and "| 3 | dyck mamba - transformer 95 % crossing | 6 |" in markdown
    assert "| 3 | dyck mamba - transformer first block at 95 % | 6 |" in markdown  # reported only


def test_the_paper_s_own_dyck_profile_leaves_the_transformer_no_room_on_finding_3():
    """The paper's Transformer reads Dyck at 100 % from L0: a profile at its ceiling in
    every block has no layer position, so that sub-claim decides nothing and finding 3 is
    inconclusive, with the sub-claim named and why."""
    check = study(probes=probes_table(paper_profile))
    verdict = rows(check.verdicts).loc[3]
    assert verdict["verdict"] == "inconclusive"
    assert verdict["deciding"] == "dyck transformer: 2 - 95 % crossing"
    assert "no room: dyck transformer: 2 - 95 % crossing (room 0 < 2 x margin" in verdict["reason"]
    assert "no room to show it" in verdict["decided_by"]
    row = decided_rows(check, 3).loc["dyck transformer: 2 - 95 % crossing"]
    assert row["status"] == NO_ROOM and row["room"] == 0
    assert decided_rows(check, 3).loc["dyck mamba - transformer 95 % crossing", "status"] == "supported"


def test_finding_1_at_the_ceiling_has_no_room_and_names_what_would():
    """Every family at 0.99-1.0 in token and sequence accuracy: no one-point gap fits under
    the ceiling, so the comparisons have no room; the verdict is inconclusive, not "not
    reproduced", and the reason points to a measure with room."""
    ceiling = lambda a, t: 1.0 if a in ("lstm", "gru") else 0.995  # noqa: E731
    check = study(behaviour=behaviour_table(ceiling, sequences=ceiling))
    verdict = rows(check.verdicts).loc[1]
    assert verdict["verdict"] == "inconclusive", verdict["reason"]
    assert verdict["deciding"].startswith("dyck recurrent - mamba (sequence accuracy)")
    row = decided_rows(check, 1).loc["dyck recurrent - mamba (sequence accuracy)"]
    assert row["status"] == NO_ROOM and row["room"] == pytest.approx(0.005, abs=0.003)
    assert "error rate at the longest length may have room" in row["reason"]
    assert decided_rows(check, 1).loc["lstm parity worst-length accuracy >= 0.99", "status"] == "supported"


def test_finding_1_s_comparisons_are_decided_on_sequence_accuracy_and_token_accuracy_is_reported():
    """A Dyck gap that only sequence accuracy shows: token accuracy 0.995 against 0.99 is no
    practical difference, sequence accuracy 0.8 against 0.5 is."""
    token = lambda a, t: 0.995 if a in ("lstm", "gru") else 0.99 if t == "dyck" else paper_accuracy(a, t)  # noqa: E731
    sequences = lambda a, t: {"lstm": 0.8, "gru": 0.8, "mamba": 0.5, "mamba2": 0.5}.get(a, 0.3)  # noqa: E731
    check = study(behaviour=behaviour_table(token, sequences=sequences))
    decided = decided_rows(check, 1)
    assert decided.loc["dyck recurrent - mamba (sequence accuracy)", "status"] == "supported"
    reported = decided.loc["dyck recurrent - mamba (token accuracy)"]
    assert not reported["decides"] and reported["status"] == NO_ROOM
    assert rows(check.verdicts).loc[1, "verdict"] == "reproduced"


def test_reversed_behaviour_is_not_reproduced_on_the_deciding_comparison():
    flipped = lambda a, t: {"transformer": 0.99, "mamba": 0.8, "mamba2": 0.8}.get(a, 0.6)  # noqa: E731
    check = study(behaviour=behaviour_table(flipped))
    verdict = rows(check.verdicts).loc[1]
    assert verdict["verdict"] == "not reproduced"
    assert "(sequence accuracy)" in verdict["deciding"] and "recurrent" in verdict["deciding"]


def test_a_gradual_rise_is_told_apart_from_a_late_jump():
    gradual = [0.5, 0.55, 0.76, 0.98, 1.0]
    profile = lambda a, t: gradual if a == "lstm" and t != "dyck" else study_profile(a, t)  # noqa: E731
    check = study(probes=probes_table(profile))
    verdict = rows(check.verdicts).loc[2]
    assert verdict["verdict"] == "not reproduced"
    assert set(verdict["deciding"].split("; ")) == {
        f"{task} lstm {what}"
        for task in ("parity", "s3")
        for what in ("95 % crossing - last block", "- transformer late concentration")
    }
    assert decided_rows(check, 2).loc["parity mamba 95 % crossing - last block", "status"] == "supported"


def test_profiles_at_the_ceiling_from_block_1_in_every_family_give_no_room():
    flat = [0.5, 1.0, 1.0, 1.0, 1.0]
    check = study(probes=probes_table(lambda a, t: flat))
    for number in (2, 3, 4):
        verdict = rows(check.verdicts).loc[number]
        assert verdict["verdict"] == "inconclusive", verdict["reason"]
        decided = decided_rows(check, number)
        assert set(decided.loc[decided["decides"], "status"]) == {NO_ROOM}
    assert "within the probe margin of its best block at every block" in rows(check.verdicts).loc[3, "reason"]


def test_a_family_without_the_flip_cannot_decide_finding_4():
    """The LSTM and GRU read parity and Dyck with the same late concentration: their S3
    comparison has no room; the other families still decide."""
    same = [0.5, 0.6, 0.8, 1.0, 1.0]
    profile = lambda a, t: same if a in ("lstm", "gru") else study_profile(a, t)  # noqa: E731
    check = study(probes=probes_table(profile))
    decided = decided_rows(check, 4)
    assert decided.loc["lstm: |s3 - dyck| - |s3 - parity| late concentration", "status"] == NO_ROOM
    assert decided.loc["gru: |s3 - dyck| - |s3 - parity| late concentration", "room"] < 0.04
    assert decided.loc["mamba: |s3 - dyck| - |s3 - parity| late concentration", "status"] == "supported"
    verdict = rows(check.verdicts).loc[4]
    assert verdict["verdict"] == "inconclusive"
    assert verdict["deciding"].startswith("lstm: |s3 - dyck| - |s3 - parity|")
    assert "a family without the flip cannot tell" in verdict["reason"]


def test_architecture_fixed_profiles_contradict_finding_3_and_leave_finding_4_no_room():
    """Every architecture keeps its parity profile on Dyck: the Transformer reaches its
    ceiling in block 3, not by block 2 (contradicted); parity and Dyck do not differ, so
    no family can show which one S3 follows."""
    fixed = lambda a, t: paper_profile(a, "parity")  # noqa: E731
    check = study(probes=probes_table(fixed))
    verdict = rows(check.verdicts)
    assert verdict.loc[3, "verdict"] == "not reproduced"
    assert verdict.loc[3, "deciding"].startswith("dyck transformer: 2 - 95 % crossing")
    assert verdict.loc[4, "verdict"] == "inconclusive" and "no room" in verdict.loc[4, "reason"]


def test_s3_behaving_like_dyck_contradicts_finding_4():
    like_dyck = lambda a, t: study_profile(a, "dyck" if t == "s3" else t)  # noqa: E731
    check = study(probes=probes_table(like_dyck))
    verdict = rows(check.verdicts).loc[4]
    assert verdict["verdict"] == "not reproduced"
    assert "|s3 - dyck| - |s3 - parity|" in verdict["deciding"]


def test_finding_5_is_decided_by_the_drop_itself_and_reports_the_drop_beyond_random():
    """The paper's claim: erasing the best probe direction costs accuracy. A drop as large
    as a random subspace's reproduces it, while the stricter comparison with random, reported
    beside it, is contradicted; an erasure that costs nothing is not reproduced."""
    check = study(**dict(zip(("erasures", "readability"), erasure_tables(0.3, random_drop=0.3))))
    assert rows(check.verdicts).loc[5, "verdict"] == "reproduced"
    decided = decided_rows(check, 5)
    excess = decided.loc["dyck L=120: probe-direction drop - random drop"]
    assert not excess["decides"] and excess["status"] == "contradicted"
    family = decided.loc["dyck L=120 lstm: probe-direction drop"]
    assert not family["decides"] and family["status"] == "supported" and family["n"] == len(SEEDS)
    assert decided.loc["dyck L=120: probe-direction drop", "room"] == pytest.approx(0.95)
    nothing = study(**dict(zip(("erasures", "readability"), erasure_tables(0.0))))
    verdict = rows(nothing.verdicts).loc[5]
    assert verdict["verdict"] == "not reproduced" and "probe-direction drop" in verdict["deciding"]


def test_the_verdicts_are_recomputed_under_every_alternative_choice():
    """Twins that read every layer as well as the trained model: the gain profiles are flat
    (no room, inconclusive), the raw accuracy shows the paper's shapes; robustness.csv has
    every alternative for findings 1-5 and claims.csv counts those that keep a verdict."""
    reads_all = probes_table(study_profile, untrained=lambda a, t, layer: study_profile(a, t)[layer])
    erasures, readability = erasure_tables(0.4)
    check = run_check(behaviour_table(paper_accuracy), reads_all, erasures, readability, ALTERNATIVES)
    robustness = check.robustness
    assert list(robustness.columns) == ROBUSTNESS_COLUMNS
    assert len(robustness) == 5 * len(ALTERNATIVES) and set(robustness["finding"]) == {1, 2, 3, 4, 5}
    raw = robustness[robustness["alternative"] == "raw probe accuracy"].set_index("finding")
    verdict = rows(check.verdicts)
    for number in (2, 3):
        assert verdict.loc[number, "verdict"] == "inconclusive"
        assert raw.loc[number, "verdict"] == "reproduced" and not raw.loc[number, "same"]
        assert "raw probe accuracy (reproduced)" in verdict.loc[number, "changed_by"]
    n = len(ALTERNATIVES)
    assert verdict.loc[1, "robust"] == f"{n} of {n}"
    assert set(check.subclaims["reading"]) == {"decided", *ALTERNATIVES}
    markdown = claims_markdown(check, TRAIN_LENGTH, GATE)
    assert "| 2 | raw probe accuracy | reproduced |" in markdown


def test_the_alternative_choices_change_what_they_name():
    """L0 as the embedding drops the top block and renumbers; the depth target replaces
    Dyck's labels; the ungated reading counts every run."""
    unlearned = not_learned([("transformer", "parity"), ("transformer", "s3")])
    erasures, readability = erasure_tables(0.4)
    check = run_check(behaviour_table(paper_accuracy, unlearned), probes_table(study_profile), erasures,
                      readability, ALTERNATIVES)  # fmt: skip
    robustness = check.robustness.set_index(["alternative", "finding"])
    assert rows(check.verdicts).loc[2, "verdict"] == "inconclusive"
    assert robustness.loc[("every run, learned or not", 2), "verdict"] == "reproduced"
    assert rows(check.verdicts).loc[2, "changed_by"].startswith("every run, learned or not (reproduced)")
    check = study(alternatives=ALTERNATIVES)
    sub = check.subclaims.set_index(["reading", "subclaim"])
    name = "parity lstm - transformer late concentration"
    # Without its top block the Transformer's parity profile (0.5 / 0.55 / 0.76 / 0.98) ends
    # in a rise as steep as the LSTM's (0.5 / 0.55 / 0.58 / 0.65): the gap shrinks.
    assert sub.loc[("L0 is the embedding", name), "mean"] < sub.loc[("decided", name), "mean"] - 0.1
    depth = sub.loc[("Dyck depth target", "dyck mamba - transformer 95 % crossing"), "n"]
    assert depth == len(SEEDS)


def claim(values, quantity=TOKEN_ACCURACY, bound=0.0, kind="greater", room=None):
    return SubClaim("x", pd.Series(values), quantity, bound, kind, room=room).evaluate(IntervalConfig(0.95))


def test_a_difference_is_supported_only_beyond_its_margin_and_contradicted_inside_it():
    """Token accuracy, margin 0.01: +0.03 clears it; +0.004 +- 0.001 is no practical
    difference (contradicted); an interval across the margin's edge decides nothing."""
    assert claim([0.029, 0.030, 0.031])["status"] == "supported"
    assert claim([0.003, 0.004, 0.005])["status"] == "contradicted"
    assert claim([-0.03, -0.031, -0.029])["status"] == "contradicted"
    assert claim([0.0, 0.01, 0.03])["status"] == "unresolved"
    row = claim([0.029, 0.030, 0.031])
    assert row["margin"] == 0.01 and row["n"] == 3 and row["ci_low"] < 0.03 < row["ci_high"]


def test_a_sub_claim_with_room_below_twice_its_margin_decides_nothing():
    """The same contradicted values with room 0.015 (< 2 x 0.01) have no room; a finding
    with it and a supported sub-claim is inconclusive, one with a contradicted one is not
    reproduced by that one."""
    assert claim([0.003, 0.004, 0.005], room=0.025)["status"] == "contradicted"
    roomless = claim([0.003, 0.004, 0.005], room=0.015)
    assert roomless["status"] == NO_ROOM and roomless["room"] == 0.015
    tight = SubClaim("tight", pd.Series([0.003, 0.004, 0.005]), TOKEN_ACCURACY, room=0.015, room_note="at the ceiling")
    fine = SubClaim("fine", pd.Series([0.029, 0.030, 0.031]), TOKEN_ACCURACY)
    wrong = SubClaim("wrong", pd.Series([-0.03, -0.031, -0.029]), TOKEN_ACCURACY)
    inconclusive = Finding(1, [tight, fine]).verdict(IntervalConfig(0.95))
    assert inconclusive["verdict"] == "inconclusive" and inconclusive["deciding"] == "tight"
    assert "no room: tight (room 0.015 < 2 x margin: at the ceiling)" in inconclusive["reason"]
    contradicted = Finding(1, [tight, wrong]).verdict(IntervalConfig(0.95))
    assert contradicted["verdict"] == "not reproduced" and contradicted["deciding"] == "wrong"
    with pytest.raises(ValueError, match="needs its room"):
        claim([1.0, 1.1, 0.9], LAYER_POSITION)


def test_a_threshold_is_reached_within_its_margin():
    """at_least 0.99 with margin 0.01: 0.985 at every seed reaches it, 0.95 does not;
    at_most 0 (an erasure that costs practically nothing): 0.004 is within the margin."""
    assert claim([0.985, 0.986, 0.985], bound=0.99, kind="at_least")["status"] == "supported"
    assert claim([0.95, 0.951, 0.949], bound=0.99, kind="at_least")["status"] == "contradicted"
    assert claim([0.004, 0.005, 0.003], kind="at_most")["status"] == "supported"
    assert claim([0.2, 0.21, 0.19], kind="at_most")["status"] == "contradicted"


def test_three_seeds_agreeing_on_a_whole_block_position_are_not_certain_five_are():
    """Whole-block positions (reported only): half a block of margin and a rounding floor
    under zero spread (1/sqrt(12) for a position, 1/sqrt(6) for the difference of two)."""
    block = lambda values, quantity=WHOLE_BLOCK_POSITION, kind="greater": claim(values, quantity, kind=kind, room=3)  # noqa: E731
    assert block([1, 1, 1])["status"] == "unresolved"
    assert block([1] * 5)["status"] == "supported"
    assert block([0] * 5)["status"] == "contradicted"
    assert block([2, 2, 2])["status"] == "supported"
    assert block([0, 0, 0], kind="at_least")["status"] == "unresolved"
    assert block([0] * 4, kind="at_least")["status"] == "supported"
    assert block([1] * 5, WHOLE_BLOCK_DIFFERENCE)["status"] == "unresolved"
    assert block([1] * 6, WHOLE_BLOCK_DIFFERENCE)["status"] == "supported"


def test_a_continuous_position_is_decided_by_the_spread_of_its_seeds_not_a_floor():
    """Three seeds whose crossings spread by a tenth of a block decide a half-block margin;
    three that spread by a block do not."""
    assert claim([0.9, 1.0, 1.1], LAYER_POSITION, room=3)["status"] == "supported"
    assert claim([-0.9, -1.0, -1.1], LAYER_POSITION, kind="at_least", room=3)["status"] == "contradicted"
    assert claim([0.1, 1.0, 2.0], LAYER_POSITION, room=3)["status"] == "unresolved"
    assert claim([0.2, 0.3, 0.25], LAYER_DIFFERENCE, room=3)["status"] == "contradicted"


def test_at_the_default_three_seeds_the_study_profiles_decide_the_layer_positions():
    """Three seeds reproduce findings 1-5; the whole-block positions beside them stay
    unresolved and decide nothing."""
    three = lambda frame: frame[frame["seed"] < 3]  # noqa: E731
    check = run_check(
        three(behaviour_table(paper_accuracy)),
        three(probes_table(study_profile)),
        *(three(t) for t in erasure_tables(0.4)),
    )
    found = dict(zip(check.verdicts["finding"], check.verdicts["verdict"]))
    assert [found[i] for i in range(1, 6)] == ["reproduced"] * 5, check.verdicts.to_string()
    decided = check.subclaims[check.subclaims["reading"] == "decided"]
    assert set(decided.loc[decided["decides"], "status"]) == {"supported"}
    whole = decided[decided["quantity"].str.startswith("whole-block")]
    assert "unresolved" in set(whole["status"]) and not whole["decides"].any()


def test_fewer_than_three_seeds_decide_no_sub_claim():
    assert MIN_SEEDS == 3
    row = claim([0.5, 0.6])
    assert row["status"] == "unresolved" and row["reason"] == "fewer than 3 seeds"
    two = lambda frame: frame[frame["seed"] < 2]  # noqa: E731
    check = run_check(
        two(behaviour_table(paper_accuracy)), two(probes_table(study_profile)), *(two(t) for t in erasure_tables(0.4))
    )
    for number in range(1, 6):
        verdict = rows(check.verdicts).loc[number]
        assert verdict["verdict"] == "inconclusive" and verdict["reason"].startswith("fewer than 3 seeds")


def test_every_sub_claim_reports_its_interval_margin_room_and_n():
    check = study()
    sub = check.subclaims
    assert list(sub.columns) == SUBCLAIM_COLUMNS
    assert sub[["margin", "room", "n", "mean", "ci_low", "ci_high"]].notna().all().all()
    assert (sub["n"] >= len(SEEDS)).all() and set(sub["interval"]) == {"95% Student t"}
    positions = decided_rows(check, 2)["quantity"]
    assert positions["parity mamba 95 % crossing - last block"] == "layer position"
    assert positions["parity mamba first block at 95 % - last block"] == "whole-block position"
    assert decided_rows(check, 3)["quantity"]["dyck mamba - transformer 95 % crossing"] == "layer position difference"
    for number in range(1, 5):
        rests_on = rows(check.verdicts)["rests_on"][number]
        assert rests_on.startswith("6 seeds per sub-claim; 95% Student t intervals; margins:"), rests_on
    assert rows(check.verdicts)["rests_on"][5].startswith("6 seeds (30 architecture x seed units) per sub-claim")


def test_a_run_learned_its_task_from_the_gate_on_at_the_training_length():
    behaviour = pd.DataFrame(
        {
            "arch": ["gru"] * 4,
            "task": ["parity"] * 4,
            "seed": [0, 0, 1, 1],
            "eval_length": [40, 80, 40, 80],
            "token_accuracy": [GATE, 0.2, GATE - 1e-4, 1.0],
        }
    )
    runs = learned_runs(behaviour, 40, GATE).set_index("seed")
    assert runs["learned"].tolist() == [True, False]  # only the training length decides
    assert learned_runs(behaviour, 40, None)["learned"].all()
    with pytest.raises(ValueError, match="training length 60"):
        learned_runs(behaviour, 60, GATE)


def test_findings_use_only_models_that_learned_and_name_those_that_did_not():
    """A Transformer that never learned parity or s3: the findings that need it there are
    inconclusive and say why; findings about tasks it learned keep their verdict."""
    unlearned = not_learned([("transformer", "parity"), ("transformer", "s3")])
    check = study(behaviour=behaviour_table(paper_accuracy, unlearned))
    found = dict(zip(check.verdicts["finding"], check.verdicts["verdict"]))
    reasons = rows(check.verdicts)["reason"]
    assert found[1] == "reproduced"  # behaviour keeps every run
    assert found[2] == "inconclusive"
    assert re.match(r"untested: transformer did not learn parity \(accuracy 0\.5\d\d at seed 0, ", reasons[2])
    assert "transformer did not learn s3 (accuracy" in reasons[2] and "at seed 3" in reasons[2]
    assert found[3] == "reproduced"  # dyck: every model it needs learned dyck
    assert found[4] == "inconclusive" and "transformer did not learn s3" in reasons[4]
    assert found[5] == "reproduced"
    assert "left out: transformer did not learn parity" in rows(check.verdicts)["measured"][5]


def test_a_model_that_learned_in_one_seed_only_leaves_its_sub_claims_untested():
    check = study(behaviour=behaviour_table(paper_accuracy, not_learned([("mamba", "dyck", [1, 2, 3, 4, 5])], 0.8)))
    verdict = rows(check.verdicts).loc[3]
    assert verdict["verdict"] == "inconclusive"
    assert re.match(r"untested: mamba did not learn dyck \(accuracy 0\.[78]\d\d at seed 1, ", verdict["reason"])
    assert "at seed 0," not in verdict["reason"] and "learned at seed 0 only" in verdict["reason"]
    three = study(behaviour=behaviour_table(paper_accuracy, not_learned([("mamba", "dyck", [3, 4, 5])], 0.8)))
    assert "did not learn" not in rows(three.verdicts)["reason"][3]
    assert re.search(r"dyck mamba - transformer 95 % crossing: \+\d\.\d{3} \[", rows(three.verdicts)["measured"][3])


def test_a_contradiction_among_the_runs_that_learned_is_not_reproduced_beside_an_unlearned_pair():
    """Architecture-fixed profiles contradict finding 3. Without learned Mamba runs on dyck,
    the Transformer's contradiction on the runs that learned still decides it, and the
    reason lists what could not be tested."""
    fixed = lambda a, t: paper_profile(a, "parity")  # noqa: E731
    check = study(behaviour=behaviour_table(paper_accuracy, not_learned([("mamba", "dyck")])),
                  probes=probes_table(fixed))  # fmt: skip
    verdict = rows(check.verdicts).loc[3]
    assert verdict["verdict"] == "not reproduced"
    assert verdict["reason"].startswith("contradicted on the runs that learned: dyck transformer: 2 - 95 % crossing")
    assert "Untested: mamba did not learn dyck (accuracy" in verdict["reason"]


def test_necessity_pools_the_runs_that_learned_each_task():
    """A Transformer that never learned parity and whose erasures do nothing is left out of
    parity's pool; when no run learned parity its sub-claims are untested."""
    drop = lambda arch, task: 0.0 if (arch, task) == ("transformer", "parity") else 0.4  # noqa: E731
    unlearned = not_learned([("transformer", "parity")])
    check = study(behaviour=behaviour_table(paper_accuracy, unlearned),
                  **dict(zip(("erasures", "readability"), erasure_tables(drop))))  # fmt: skip
    assert rows(check.verdicts).loc[5, "verdict"] == "reproduced"
    nobody = not_learned([(arch, "parity") for arch in ARCHS])
    check = study(behaviour=behaviour_table(paper_accuracy, nobody))
    assert rows(check.verdicts).loc[5, "verdict"] == "inconclusive"
    assert "lstm did not learn parity" in rows(check.verdicts)["reason"][5]


def conv1d_rows(lost_pp, accuracy=0.9):
    """The Conv1D table for Mamba and its no-conv variant; ``lost_pp[task]`` = accuracy lost without Conv1D."""
    rows = []
    for task in ("parity", "s3", "dyck"):
        for seed in SEEDS:
            conv = noisy(accuracy, seed)
            for variant, value in (
                ("conv", conv),
                ("noconv_trained", conv - lost_pp[task] / 100 + noisy(0, seed + 9)),
            ):
                rows += [
                    {"family": "mamba", "variant": variant, "task": task, "seed": seed, "eval_length": length,
                     "token_accuracy": value, "sequence_accuracy": 0.0}  # fmt: skip
                    for length in LENGTHS
                ]
    return pd.DataFrame(rows)


def finding(number, **tables):
    """The verdict row of finding ``number`` on the study's behaviour and probes plus ``tables``."""
    return rows(run_check(behaviour_table(paper_accuracy), probes_table(study_profile), **tables).verdicts).loc[number]


def test_conv1d_finding_follows_the_no_conv_comparison():
    verdict = lambda lost, accuracy=0.9: finding(7, conv1d=conv1d_rows(lost, accuracy))  # noqa: E731
    assert verdict({"s3": 12.6, "parity": 6.8, "dyck": -4.0})["verdict"] == "reproduced"
    # Conv1D helping nowhere, or helping Dyck most, contradicts the finding.
    assert verdict({"s3": -5.0, "parity": -5.0, "dyck": -5.0})["verdict"] == "not reproduced"
    assert verdict({"s3": 3.0, "parity": 6.8, "dyck": 15.0})["verdict"] == "not reproduced"
    unlearned = verdict({"s3": 12.6, "parity": 6.8, "dyck": -4.0}, accuracy=0.6)
    assert unlearned["verdict"] == "reproduced"
    for column in ("reason", "measured"):
        assert "Mamba did not learn s3" in unlearned[column]
        assert "measured between models that did not learn it" in unlearned[column]
    assert "did not learn" not in verdict({"s3": 12.6, "parity": 6.8, "dyck": -4.0}, accuracy=0.97)["reason"]
    missing = finding(7, conv1d=None)
    assert missing["verdict"] == "inconclusive" and "mamba_noconv" in missing["reason"]


def pretrained_tables(pythia_drops, mamba_last_drop, recovery):
    """Pythia-160M (12 blocks) and Mamba-130M (24 blocks) on dyck, six seeds.

    ``pythia_drops(block)`` is the probe-direction drop; Pythia's probes peak at the
    last block; Mamba's last block is its most readable; ``recovery`` is the patching
    fraction at Mamba's last block input.
    """
    probes, erasures, patching = [], [], []
    for arch, blocks in (("pythia-160m", 12), ("mamba-130m", 24)):
        for seed in SEEDS:
            for layer in range(blocks + 1):
                key = {"arch": arch, "task": "dyck", "seed": seed, "layer": layer}
                accuracy = 0.5 + 0.45 * layer / blocks
                probes.append({**key, "target": "labels", "split": "probe", "eval_length": 40,
                               "probe_accuracy": noisy(accuracy, seed + layer, 0.003)})  # fmt: skip
                drop = pythia_drops(layer) if arch == "pythia-160m" else (mamba_last_drop if layer == blocks else 0.3)
                erasures.append({**key, "method": "probe", "eval_length": 40,
                                 "drop": noisy(drop, seed + layer, 0.0002)})  # fmt: skip
                if arch == "mamba-130m" and layer == blocks - 1:
                    patching += [
                        {**key, "direction": "denoising", "position": position,
                         "fraction": noisy(recovery, seed + position, 0.01)}  # fmt: skip
                        for position in range(40)
                    ]
    return pd.DataFrame(probes), pd.DataFrame(erasures), pd.DataFrame(patching)


def pretrained_verdict(probes, erasures, patching):
    return finding(6, pretrained_probes=probes, pretrained_erasures=erasures, patching=patching)


def test_pretrained_finding_follows_bottleneck_readability_and_patching():
    bottleneck = lambda block: 0.8 if block in (7, 8) else 0.05  # noqa: E731  (paper's L6-L7)
    paper = pretrained_verdict(*pretrained_tables(bottleneck, 0.0005, 0.97))
    assert paper["verdict"] == "reproduced", paper["measured"]
    late = lambda block: 0.8 if block == 12 else 0.05  # noqa: E731
    assert pretrained_verdict(*pretrained_tables(late, 0.0005, 0.97))["verdict"] == "not reproduced"
    assert pretrained_verdict(*pretrained_tables(bottleneck, 0.2, 0.97))["verdict"] == "not reproduced"
    assert pretrained_verdict(*pretrained_tables(bottleneck, 0.0005, 0.3))["verdict"] == "not reproduced"
    probes, erasures, patching = pretrained_tables(bottleneck, 0.0005, 0.97)
    absent = pretrained_verdict(probes[probes["arch"] != "mamba-130m"], erasures, patching)
    assert absent["verdict"] == "inconclusive" and "mamba-130m" in absent["reason"]


def test_a_finding_without_sub_claims_is_not_reproduced_by_default():
    """all() over nothing is True: a finding must have sub-claims to be supported."""
    verdict = Finding(4).verdict(IntervalConfig(0.95))
    assert verdict["verdict"] == "inconclusive" and "no sub-claim" in verdict["reason"]


def test_a_missing_architecture_or_stage_is_named():
    only_gru = lambda frame: frame[frame["arch"] == "gru"]  # noqa: E731
    check = run_check(only_gru(behaviour_table(paper_accuracy)), only_gru(probes_table(study_profile)))
    verdict = rows(check.verdicts)
    assert verdict.loc[1, "verdict"] == "inconclusive" and "architectures not in this run" in verdict.loc[1, "reason"]
    assert verdict.loc[4, "verdict"] == "inconclusive" and "architectures not in this run" in verdict.loc[4, "reason"]
    assert "erasures stage did not run" in verdict.loc[5, "reason"]
    assert "snakemake --configfile config/pretrained.yaml" in verdict.loc[6, "reason"]  # what would run it


def test_necessity_leaves_the_conv1d_ablated_models_out():
    """Finding 5 pools the five families; a Conv1D-ablated variant whose erasures do nothing
    must not move it (it enters finding 7 only)."""
    behaviour, probes = behaviour_table(paper_accuracy), probes_table(study_profile)
    erasures, readability = erasure_tables(0.4)
    variant = lambda frame: frame[frame["arch"] == "mamba"].assign(arch="mamba_noconv")  # noqa: E731
    noconv = variant(erasures)
    noconv.loc[noconv["method"] == "probe", "drop"] = 0.0
    with_variant = run_check(pd.concat([behaviour, variant(behaviour)]), probes, pd.concat([erasures, noconv]),
                             pd.concat([readability, variant(readability)]))  # fmt: skip
    alone = run_check(behaviour, probes, erasures, readability)
    pd.testing.assert_frame_equal(decided_rows(with_variant, 5), decided_rows(alone, 5))


LEARNABILITY = pd.DataFrame(
    [
        {"arch": "transformer", "task": "s3", "cap": 6000, "steps_to_95": None, "best_val_accuracy": 0.44},
        {"arch": "transformer", "task": "s3", "cap": 20000, "steps_to_95": None, "best_val_accuracy": 0.61},
        {"arch": "transformer", "task": "parity", "cap": 6000, "steps_to_95": 1950, "best_val_accuracy": 0.99},
    ]
)


def test_an_inconclusive_verdict_says_what_would_decide_it_per_task():
    """The Transformer did not learn s3 or parity: finding 2 is inconclusive, its reason
    says per task what was decided and what was untested, with the steps each pair needs."""
    unlearned = not_learned([("transformer", "parity"), ("transformer", "s3")])
    check = run_check(behaviour_table(paper_accuracy, unlearned), probes_table(study_profile),
                      learnability=LEARNABILITY)  # fmt: skip
    verdict = rows(check.verdicts).loc[2]
    assert verdict["verdict"] == "inconclusive"
    reason = verdict["reason"]
    assert "it needs more than 20000 steps (seed 0 reached 0.610 validation accuracy in 20000)" in reason
    assert "it reached validation 0.95 at step 1950 of a seed-0 run" in reason
    parts = reason.split("by part: ")[1].split(" | ")
    assert parts[0].startswith("parity: supported: parity mamba 95 % crossing - last block")
    assert "untested: transformer did not learn parity" in parts[0]
    assert parts[1].startswith("s3: supported:") and "untested: transformer did not learn s3" in parts[1]


def test_an_unresolved_sub_claim_carries_its_planning_figure():
    spread = SubClaim("x", pd.Series([0.0, 0.02, 0.05]), TOKEN_ACCURACY)
    row = spread.evaluate(IntervalConfig(0.95))
    assert row["status"] == "unresolved" and row["seeds_to_decide"].endswith(" seeds")
    verdict = Finding(1, [spread]).verdict(IntervalConfig(0.95))
    assert verdict["verdict"] == "inconclusive"
    assert f"planning figure: {row['seeds_to_decide']} at its observed mean and sd would decide it" in verdict["reason"]


def near_the_edge(flip_at):
    """Three values whose difference clears the token-accuracy margin (0.01) exactly at
    confidence ``flip_at``."""
    from scipy import stats

    distance = 0.02
    sd = distance / stats.t.ppf((1 + flip_at) / 2, 2) * np.sqrt(3)
    return pd.Series([0.03 - sd, 0.03, 0.03 + sd])


def test_a_verdict_whose_deciding_sub_claim_changes_status_inside_the_band_is_fragile():
    low, high = FRAGILE_BAND
    config = IntervalConfig(0.95)
    fragile = Finding(1, [SubClaim("x", near_the_edge(0.97), TOKEN_ACCURACY)]).verdict(config)
    assert fragile["verdict"] == "reproduced" and fragile["fragile"]
    assert fragile["fragility"] == f"reproduced at {low:.0%}, inconclusive at {high:.0%}"
    robust = Finding(1, [SubClaim("x", near_the_edge(0.999), TOKEN_ACCURACY)]).verdict(config)
    assert robust["verdict"] == "reproduced" and not robust["fragile"]
    row = SubClaim("x", near_the_edge(0.97), TOKEN_ACCURACY).evaluate(config)
    assert row["fragile"] and abs(row["flip_confidence"] - 0.97) < 1e-9
    inside = Finding(1, [SubClaim("x", -near_the_edge(0.96) + 0.02, TOKEN_ACCURACY)]).verdict(config)
    assert inside["verdict"] == "not reproduced" and inside["fragile"]


def test_one_robust_contradiction_keeps_a_not_reproduced_verdict_robust():
    claims = [
        SubClaim("near", near_the_edge(0.97), TOKEN_ACCURACY, plain="A beats B"),
        SubClaim("far below", pd.Series([-0.05, -0.051, -0.049]), TOKEN_ACCURACY, plain="C beats D"),
    ]
    verdict = Finding(1, claims).verdict(IntervalConfig(0.95))
    assert verdict["verdict"] == "not reproduced" and not verdict["fragile"]
    assert verdict["deciding"] == "far below" and verdict["decided_by"] == "C beats D: not so"


def test_a_run_whose_label_probes_did_not_converge_is_left_out_of_the_profiles_and_counted():
    """A non-converged probe could move a profile unseen: its run leaves findings 2-4 (like a
    run that did not learn) and claims.md counts it."""
    probes = probes_table(study_profile).assign(converged=True)
    stuck = (probes["arch"] == "mamba") & (probes["task"] == "dyck") & (probes["seed"] >= 1)
    probes.loc[stuck & (probes["layer"] == 2) & (probes["target"] == "labels"), "converged"] = False
    check = run_check(behaviour_table(paper_accuracy), probes)
    verdict = rows(check.verdicts).loc[3]
    assert verdict["verdict"] == "inconclusive"
    assert "mamba on dyck: label probes did not converge at seed 1, 2, 3, 4, 5" in verdict["reason"]
    assert rows(check.verdicts).loc[1, "verdict"] == "reproduced"  # behaviour does not read probes
    markdown = claims_markdown(check, TRAIN_LENGTH, GATE)
    assert "| mamba | dyck | 6 of 6 | " in markdown and "| 0, 1, 1, 1, 1, 1 |" in markdown


def with_runs_of(table, source, arch, as_arch):
    """``table`` plus ``source``'s runs of ``arch``, relabelled ``as_arch``."""
    return pd.concat([table, source[source["arch"] == arch].assign(arch=as_arch)], ignore_index=True)


def test_a_signed_variant_decides_findings_2_and_4_in_its_family_s_place_and_never_the_default_verdicts():
    """mamba_signed's S3 profile follows Dyck where Mamba's follows parity: the extension's
    verdicts are those of a run whose Mamba had the variant's profiles, and the default
    verdicts are those of the run without the variant."""
    like_dyck = probes_table(lambda a, t: study_profile(a, "dyck" if t == "s3" else t))
    behaviour, probes = behaviour_table(paper_accuracy), probes_table(study_profile)
    erasures, readability = erasure_tables(0.4)
    tables = {"erasures": erasures, "readability": readability}
    without = study()
    assert without.extension.empty
    check = study(
        behaviour=with_runs_of(behaviour, behaviour, "mamba", "mamba_signed"),
        probes=with_runs_of(probes, like_dyck, "mamba", "mamba_signed"),
    )
    pd.testing.assert_frame_equal(check.verdicts, without.verdicts)
    replaced = study(probes=pd.concat([probes[probes["arch"] != "mamba"], like_dyck[like_dyck["arch"] == "mamba"]]),
                     **tables)  # fmt: skip
    extension = check.extension.set_index("finding")
    assert list(extension.index) == [2, 4] and set(extension["stand_in"]) == {"mamba_signed"}
    expected = rows(replaced.verdicts)
    for finding in (2, 4):
        for column in ("verdict", "deciding", "reason"):
            assert extension.loc[finding, column] == expected.loc[finding, column]
    assert extension.loc[4, "verdict"] == "not reproduced" != rows(without.verdicts).loc[4, "verdict"]
    markdown = claims_markdown(check, TRAIN_LENGTH, GATE)
    assert "## Extension: findings 2 and 4" in markdown and "| 4 | mamba_signed | mamba | **not reproduced** |" in markdown
    assert "## Extension" not in claims_markdown(without, TRAIN_LENGTH, GATE)
