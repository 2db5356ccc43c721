"""Verdict rules on synthetic tables built to reproduce, or to contradict, each finding."""

import re

import numpy as np
import pandas as pd
import pytest

from statelayers.report.claims import (
    FRAGILE_BAND,
    LAYER_DIFFERENCE,
    LAYER_POSITION,
    LEARNED_ACCURACY,
    MIN_SEEDS,
    SUBCLAIM_COLUMNS,
    TOKEN_ACCURACY,
    WHOLE_BLOCK_DIFFERENCE,
    WHOLE_BLOCK_POSITION,
    Finding,
    SubClaim,
    check_claims,
    claims_markdown,
    learned_runs,
)
from statelayers.report.stats import IntervalConfig

ARCHS = ["transformer", "mamba", "mamba2", "lstm", "gru"]
SEEDS = [0, 1, 2, 3, 4, 5]  # six: a one-block difference of two layer positions needs them
TRAIN_LENGTH = 40
LENGTHS = [TRAIN_LENGTH, 80, 120]


def noisy(value, seed, scale=0.005):
    return float(np.clip(value + np.random.default_rng(seed).normal(0, scale), 0, 1))


def learned_everywhere(arch, task, seed):
    return None


def behaviour_table(accuracy, at_train=learned_everywhere):
    """``accuracy(arch, task) -> float`` at the longer lengths, plus small seed noise; at
    the training length ``at_train(arch, task, seed)``, or where that is None at least
    0.99 (the model learned its task)."""

    def value(a, t, s, n):
        if n == TRAIN_LENGTH:
            trained = at_train(a, t, s)
            target = max(accuracy(a, t), 0.99) if trained is None else trained
        else:
            target = accuracy(a, t)
        return 1.0 if target == 1.0 else noisy(target, s * 7 + n)

    return pd.DataFrame(
        [
            {"arch": a, "task": t, "seed": s, "eval_length": n, "token_accuracy": value(a, t, s, n)}
            for a in ARCHS
            for t in ("parity", "s3", "dyck")
            for s in SEEDS
            for n in LENGTHS
        ]
    )


def not_learned(runs, accuracy=0.55):
    """``at_train`` where the (arch, task) pairs of ``runs`` (all seeds, or the seeds
    given as a third element) stay at ``accuracy``."""
    keyed = {(r[0], r[1]): (r[2] if len(r) > 2 else SEEDS) for r in runs}
    return lambda a, t, s: accuracy if s in keyed.get((a, t), ()) else None


def paper_accuracy(arch, task):
    if arch in ("lstm", "gru"):
        return 1.0 if task != "dyck" else 0.99
    return {"mamba": 0.85, "mamba2": 0.85, "transformer": 0.6}[arch]


PAPER_PROFILES = {  # probe accuracy at embedding, blocks 1-4
    ("mamba", "parity"): [0.5, 0.55, 0.60, 0.71, 1.0],
    ("lstm", "parity"): [0.5, 0.55, 0.58, 0.65, 1.0],
    ("transformer", "parity"): [0.5, 0.55, 0.76, 0.98, 1.0],
    ("mamba", "dyck"): [0.5, 0.73, 1.0, 1.0, 1.0],
    ("lstm", "dyck"): [0.5, 0.70, 0.90, 1.0, 1.0],
    ("transformer", "dyck"): [0.5, 1.0, 1.0, 1.0, 1.0],
}


def probes_table(profile):
    rows = []
    for a in ARCHS:
        for t in ("parity", "s3", "dyck"):
            for s in SEEDS:
                for layer, acc in enumerate(profile(a, t)):
                    rows.append(
                        {
                            "arch": a,
                            "task": t,
                            "seed": s,
                            "target": "labels",
                            "split": "probe",
                            "eval_length": 40,
                            "layer": layer,
                            "probe_accuracy": noisy(acc, s + layer, 0.003),
                        }
                    )
    return pd.DataFrame(rows)


def paper_profile(arch, task):
    family = {"mamba2": "mamba", "gru": "lstm"}.get(arch, arch)
    return PAPER_PROFILES[(family, "parity" if task == "s3" else task)]


def erasure_tables(probe_drop):
    """``probe_drop``: the drop of the probe-direction erasure, a number or ``f(arch, task)``."""
    drop_of = probe_drop if callable(probe_drop) else (lambda a, t: probe_drop)
    rows, readability = [], []
    for a in ARCHS:
        for t in ("parity", "s3", "dyck"):
            for s in SEEDS:
                readability.append(
                    {"arch": a, "task": t, "seed": s, "method": "probe", "best_probe_layer": 4}
                )
                for n in LENGTHS:
                    rows.append(
                        {
                            "arch": a,
                            "task": t,
                            "seed": s,
                            "layer": 4,
                            "method": "probe",
                            "rank": 1,
                            "eval_length": n,
                            "drop": noisy(drop_of(a, t), s + n, 0.02),
                        }
                    )
                    for draw in range(2):
                        rows.append(
                            {
                                "arch": a,
                                "task": t,
                                "seed": s,
                                "layer": 4,
                                "method": "random",
                                "rank": 1,
                                "eval_length": n,
                                "drop": noisy(0.01, s + n + draw, 0.005),
                            }
                        )
    return pd.DataFrame(rows), pd.DataFrame(readability)


def run_check(behaviour, probes, erasures=None, readability=None):
    return check_claims(
        behaviour, probes, erasures, readability, scale="synthetic", train_length=TRAIN_LENGTH
    )


def verdicts(behaviour, probes, erasures=None, readability=None):
    claims = run_check(behaviour, probes, erasures, readability).verdicts
    return dict(zip(claims["finding"], claims["verdict"])), claims


def rows(claims):
    return claims.set_index("finding")


def test_paper_like_tables_reproduce_findings_1_to_5():
    check = run_check(behaviour_table(paper_accuracy), probes_table(paper_profile), *erasure_tables(0.4))
    found = dict(zip(check.verdicts["finding"], check.verdicts["verdict"]))
    assert [found[i] for i in range(1, 6)] == ["reproduced"] * 5, check.verdicts.to_string()
    assert found[6] == found[7] == "inconclusive"
    markdown = claims_markdown(check, TRAIN_LENGTH)
    assert "Claims check" in markdown and "| transformer | parity | 6 of 6 |" in markdown
    assert "Student t" in markdown and "| 3 | dyck mamba - transformer 95 % crossing | 6 |" in markdown
    assert "| 3 | dyck mamba - transformer first block at 95 % | 6 |" in markdown  # reported only


def test_reversed_behaviour_is_not_reproduced():
    flipped = lambda a, t: {"transformer": 0.99, "mamba": 0.8, "mamba2": 0.8}.get(a, 0.6)  # noqa: E731
    found, _ = verdicts(behaviour_table(flipped), probes_table(paper_profile))
    assert found[1] == "not reproduced"


def test_architecture_fixed_profiles_do_not_reproduce_the_inversion():
    """If every architecture kept its parity profile on Dyck, findings 3 and 4 fail."""
    fixed = lambda a, t: paper_profile(a, "parity")  # noqa: E731
    found, _ = verdicts(behaviour_table(paper_accuracy), probes_table(fixed))
    assert found[3] == "not reproduced"
    # s3 is as close to dyck as to parity: equivalent within the margin, so "closer to
    # parity" is contradicted (before margins this was undecided).
    assert found[4] == "not reproduced"


def test_s3_behaving_like_dyck_contradicts_finding_4():
    like_dyck = lambda a, t: paper_profile(a, "dyck" if t == "s3" else t)  # noqa: E731
    found, _ = verdicts(behaviour_table(paper_accuracy), probes_table(like_dyck))
    assert found[4] == "not reproduced"


def test_ablation_no_better_than_random_is_not_reproduced():
    found, _ = verdicts(behaviour_table(paper_accuracy), probes_table(paper_profile), *erasure_tables(0.0))
    assert found[5] == "not reproduced"


def test_single_seed_is_inconclusive_not_reproduced():
    behaviour = behaviour_table(paper_accuracy)
    probes = probes_table(paper_profile)
    found, claims = verdicts(behaviour[behaviour["seed"] == 0], probes[probes["seed"] == 0])
    assert {found[i] for i in range(1, 5)} == {"inconclusive"}


def test_missing_architecture_or_stage_is_named():
    behaviour = behaviour_table(paper_accuracy)
    found, claims = verdicts(behaviour[behaviour["arch"] != "gru"], probes_table(paper_profile))
    reasons = dict(zip(claims["finding"], claims["reason"]))
    assert found[1] == "inconclusive" and "gru" in reasons[1]
    assert "erasures stage did not run" in reasons[5]


def test_a_run_learned_its_task_from_the_threshold_on_at_the_training_length():
    behaviour = pd.DataFrame(
        {
            "arch": ["gru"] * 4,
            "task": ["parity"] * 4,
            "seed": [0, 0, 1, 1],
            "eval_length": [40, 80, 40, 80],
            "token_accuracy": [LEARNED_ACCURACY, 0.2, LEARNED_ACCURACY - 1e-4, 1.0],
        }
    )
    runs = learned_runs(behaviour, 40).set_index("seed")
    assert runs["learned"].tolist() == [True, False]  # only the training length decides
    with pytest.raises(ValueError, match="training length 60"):
        learned_runs(behaviour, 60)


def test_findings_use_only_models_that_learned_and_name_those_that_did_not():
    """A Transformer that never learned parity or s3: the findings that need it there are
    inconclusive and say why; findings about tasks it learned keep their verdict."""
    unlearned = not_learned([("transformer", "parity"), ("transformer", "s3")])
    found, claims = verdicts(
        behaviour_table(paper_accuracy, unlearned), probes_table(paper_profile), *erasure_tables(0.4)
    )
    reasons = rows(claims)["reason"]
    assert found[1] == "reproduced"  # behaviour keeps every run
    assert found[2] == "inconclusive"
    assert re.match(r"untested: transformer did not learn parity \(accuracy 0\.5\d\d at seed 0, ", reasons[2])
    assert "transformer did not learn s3 (accuracy" in reasons[2] and "at seed 3" in reasons[2]
    assert found[3] == "reproduced"  # dyck: every model it needs learned dyck
    assert found[4] == "inconclusive" and "transformer did not learn s3" in reasons[4]
    assert found[5] == "reproduced"
    assert "left out: transformer did not learn parity" in rows(claims)["measured"][5]


def test_a_model_that_learned_in_one_seed_only_leaves_its_sub_claims_unresolved():
    unlearned = not_learned([("mamba", "dyck", [1, 2, 3, 4, 5])], accuracy=0.8)
    found, claims = verdicts(behaviour_table(paper_accuracy, unlearned), probes_table(paper_profile))
    assert found[3] == "inconclusive"
    reason = rows(claims)["reason"][3]
    assert re.match(r"untested: mamba did not learn dyck \(accuracy 0\.[78]\d\d at seed 1, ", reason)
    assert "at seed 0," not in reason and "learned at seed 0 only" in reason
    # Three learned seeds are enough: the sub-claim is decided on them; two are not.
    three_learned = not_learned([("mamba", "dyck", [3, 4, 5])], accuracy=0.8)
    found, claims = verdicts(behaviour_table(paper_accuracy, three_learned), probes_table(paper_profile))
    assert "did not learn" not in rows(claims)["reason"][3]
    assert re.search(r"dyck mamba - transformer 95 % crossing: \+0\.9\d\d \[", rows(claims)["measured"][3])
    two_learned = not_learned([("mamba", "dyck", [2, 3, 4, 5])], accuracy=0.8)
    found, claims = verdicts(behaviour_table(paper_accuracy, two_learned), probes_table(paper_profile))
    assert found[3] == "inconclusive" and "mamba did not learn dyck" in rows(claims)["reason"][3]


def test_a_contradiction_among_the_runs_that_learned_is_not_reproduced_beside_an_unlearned_pair():
    """Architecture-fixed profiles contradict finding 3 (test above). Without learned Mamba
    runs on dyck, the Transformer's contradiction on the runs that learned still decides
    it: a finding is a conjunction, and the reason lists what could not be tested."""

    def fixed(arch, task):
        return paper_profile(arch, "parity")

    found, claims = verdicts(
        behaviour_table(paper_accuracy, not_learned([("mamba", "dyck")])), probes_table(fixed)
    )
    verdict = rows(claims).loc[3]
    assert found[3] == "not reproduced"
    assert verdict["reason"].startswith(
        "contradicted on the runs that learned: dyck transformer: 2 - 95 % crossing"
    )
    assert "Untested: mamba did not learn dyck (accuracy" in verdict["reason"]
    assert "dyck transformer: 2 - 95 % crossing" in verdict["deciding"]


def test_necessity_pools_the_runs_that_learned_each_task():
    """A Transformer that never learned parity and whose erasures do nothing is left out of
    parity's pool; when no run learned parity its sub-claims are unresolved."""

    def drop(arch, task):
        return 0.0 if (arch, task) == ("transformer", "parity") else 0.4

    unlearned = not_learned([("transformer", "parity")])
    found, claims = verdicts(
        behaviour_table(paper_accuracy, unlearned), probes_table(paper_profile), *erasure_tables(drop)
    )
    assert found[5] == "reproduced"
    nobody = not_learned([(arch, "parity") for arch in ARCHS])
    found, claims = verdicts(
        behaviour_table(paper_accuracy, nobody), probes_table(paper_profile), *erasure_tables(0.4)
    )
    assert found[5] == "inconclusive"
    assert "lstm did not learn parity" in rows(claims)["reason"][5]


def conv1d_rows(lost_pp):
    """The Conv1D table for Mamba and its no-conv variant; ``lost_pp[task]`` = accuracy lost without Conv1D."""
    rows = []
    for task in ("parity", "s3", "dyck"):
        for seed in SEEDS:
            conv = noisy(0.9, seed)
            for variant, accuracy in (
                ("conv", conv),
                ("noconv_trained", conv - lost_pp[task] / 100 + noisy(0, seed + 9)),
            ):
                rows += [
                    {
                        "family": "mamba",
                        "variant": variant,
                        "task": task,
                        "seed": seed,
                        "eval_length": length,
                        "token_accuracy": accuracy,
                        "sequence_accuracy": 0.0,
                    }
                    for length in LENGTHS
                ]
    return pd.DataFrame(rows)


def finding(number, **tables):
    """The verdict row of finding ``number`` on paper-like behaviour and probes plus ``tables``."""
    check = check_claims(
        behaviour_table(paper_accuracy),
        probes_table(paper_profile),
        None,
        None,
        "synthetic",
        train_length=TRAIN_LENGTH,
        **tables,
    )
    return check.verdicts.set_index("finding").loc[number]


def conv1d_verdict(lost_pp):
    return finding(7, conv1d=None if lost_pp is None else conv1d_rows(lost_pp))


def test_conv1d_finding_follows_the_no_conv_comparison():
    assert conv1d_verdict({"s3": 12.6, "parity": 6.8, "dyck": -4.0})["verdict"] == "reproduced"
    # Conv1D helping nowhere, or helping Dyck most, contradicts the finding.
    assert conv1d_verdict({"s3": -5.0, "parity": -5.0, "dyck": -5.0})["verdict"] == "not reproduced"
    assert conv1d_verdict({"s3": 3.0, "parity": 6.8, "dyck": 15.0})["verdict"] == "not reproduced"
    missing = conv1d_verdict(None)
    assert missing["verdict"] == "inconclusive" and "mamba_noconv" in missing["reason"]


def pretrained_tables(pythia_drops, mamba_last_drop, recovery):
    """Pythia-160M (12 blocks) and Mamba-130M (24 blocks) on dyck, four seeds.

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
                probes.append(
                    {
                        **key,
                        "target": "labels",
                        "split": "probe",
                        "eval_length": 40,
                        "probe_accuracy": noisy(accuracy, seed + layer, 0.003),
                    }
                )
                drop = (
                    pythia_drops(layer)
                    if arch == "pythia-160m"
                    else (mamba_last_drop if layer == blocks else 0.3)
                )
                erasures.append(
                    {**key, "method": "probe", "eval_length": 40, "drop": noisy(drop, seed + layer, 0.0002)}
                )
                if arch == "mamba-130m" and layer == blocks - 1:
                    patching += [
                        {
                            **key,
                            "direction": "denoising",
                            "position": position,
                            "fraction": noisy(recovery, seed + position, 0.01),
                        }
                        for position in range(40)
                    ]
    return pd.DataFrame(probes), pd.DataFrame(erasures), pd.DataFrame(patching)


def pretrained_verdict(probes, erasures, patching):
    return finding(6, pretrained_probes=probes, pretrained_erasures=erasures, patching=patching)


def test_pretrained_finding_follows_bottleneck_readability_and_patching():
    bottleneck = lambda block: 0.8 if block in (7, 8) else 0.05  # noqa: E731  (paper's L6-L7)
    paper = pretrained_verdict(*pretrained_tables(bottleneck, 0.0005, 0.97))
    assert paper["verdict"] == "reproduced", paper["measured"]
    # The bottleneck at the last block, or a last-block erasure that hurts, contradicts it.
    late = lambda block: 0.8 if block == 12 else 0.05  # noqa: E731
    assert pretrained_verdict(*pretrained_tables(late, 0.0005, 0.97))["verdict"] == "not reproduced"
    assert pretrained_verdict(*pretrained_tables(bottleneck, 0.2, 0.97))["verdict"] == "not reproduced"
    assert pretrained_verdict(*pretrained_tables(bottleneck, 0.0005, 0.3))["verdict"] == "not reproduced"
    probes, erasures, patching = pretrained_tables(bottleneck, 0.0005, 0.97)
    absent = pretrained_verdict(probes[probes["arch"] != "mamba-130m"], erasures, patching)
    assert absent["verdict"] == "inconclusive" and "mamba-130m" in absent["reason"]


def with_twins(probes, untrained):
    """``probes`` with the gain over an untrained twin whose accuracy is ``untrained(row)``."""
    twin = probes.apply(untrained, axis=1)
    return probes.assign(untrained_accuracy=twin, gain_over_untrained=probes["probe_accuracy"] - twin)


def test_findings_2_to_4_are_also_reported_on_the_gain_over_the_untrained_twin():
    behaviour, probes = behaviour_table(paper_accuracy), probes_table(paper_profile)
    at_chance = with_twins(probes, lambda row: 0.5)  # the gain profile has the accuracy's shape
    reads_all = with_twins(probes, lambda row: row["probe_accuracy"])  # training added nothing
    found, claims = verdicts(behaviour, at_chance, *erasure_tables(0.4))
    assert found == verdicts(behaviour, probes, *erasure_tables(0.4))[0]  # verdicts stay on accuracy
    gains = rows(claims)["on_gains"]
    for number in (2, 3, 4):
        statuses = gains[number].split(" | ")
        assert statuses and all(text.endswith(": supported") for text in statuses), gains[number]
    assert all(gains[number] == "" for number in (1, 5, 6, 7))
    check = run_check(behaviour, reads_all, *erasure_tables(0.4))
    assert "supported" not in " ".join(rows(check.verdicts)["on_gains"])
    markdown = claims_markdown(check, TRAIN_LENGTH)
    assert "gain over the untrained twin" in markdown


def claim(values, quantity=TOKEN_ACCURACY, bound=0.0, kind="greater"):
    return SubClaim("x", pd.Series(values), quantity, bound, kind).evaluate(IntervalConfig())


def test_a_difference_is_supported_only_beyond_its_margin_and_contradicted_inside_it():
    """Token accuracy, margin 0.01: +0.03 clears it; +0.004 +- 0.001 is no practical
    difference (contradicted); an interval across the margin's edge decides nothing."""
    assert claim([0.029, 0.030, 0.031])["status"] == "supported"
    assert claim([0.003, 0.004, 0.005])["status"] == "contradicted"
    assert claim([-0.03, -0.031, -0.029])["status"] == "contradicted"
    assert claim([0.0, 0.01, 0.03])["status"] == "unresolved"
    row = claim([0.029, 0.030, 0.031])
    assert row["margin"] == 0.01 and row["n"] == 3 and row["ci_low"] < 0.03 < row["ci_high"]


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
    assert claim([1, 1, 1], WHOLE_BLOCK_POSITION)["status"] == "unresolved"
    assert claim([1] * 5, WHOLE_BLOCK_POSITION)["status"] == "supported"
    assert claim([0] * 5, WHOLE_BLOCK_POSITION)["status"] == "contradicted"
    assert claim([2, 2, 2], WHOLE_BLOCK_POSITION)["status"] == "supported"
    assert claim([0, 0, 0], WHOLE_BLOCK_POSITION, kind="at_least")["status"] == "unresolved"
    assert claim([0] * 4, WHOLE_BLOCK_POSITION, kind="at_least")["status"] == "supported"
    assert claim([1] * 5, WHOLE_BLOCK_DIFFERENCE)["status"] == "unresolved"
    assert claim([1] * 6, WHOLE_BLOCK_DIFFERENCE)["status"] == "supported"


def test_a_continuous_position_is_decided_by_the_spread_of_its_seeds_not_a_floor():
    """Three seeds whose crossings spread by a tenth of a block decide a half-block margin;
    three that spread by a block do not."""
    assert claim([0.9, 1.0, 1.1], LAYER_POSITION)["status"] == "supported"
    assert claim([-0.9, -1.0, -1.1], LAYER_POSITION, kind="at_least")["status"] == "contradicted"
    assert claim([0.1, 1.0, 2.0], LAYER_POSITION)["status"] == "unresolved"
    assert claim([0.2, 0.3, 0.25], LAYER_DIFFERENCE)["status"] == "contradicted"


def test_at_the_default_three_seeds_paper_like_profiles_decide_the_layer_positions():
    """With continuous positions, three seeds of paper-like profiles reproduce findings
    1-5; the whole-block positions beside them stay unresolved and decide nothing."""
    three = lambda frame: frame[frame["seed"] < 3]  # noqa: E731
    check = run_check(
        three(behaviour_table(paper_accuracy)),
        three(probes_table(paper_profile)),
        *(three(t) for t in erasure_tables(0.4)),
    )
    found = dict(zip(check.verdicts["finding"], check.verdicts["verdict"]))
    assert [found[i] for i in range(1, 6)] == ["reproduced"] * 5, check.verdicts.to_string()
    gated = check.subclaims[check.subclaims["reading"] == "gated"]
    assert set(gated.loc[gated["decides"], "status"]) == {"supported"}
    whole = gated[~gated["decides"]]
    assert set(whole["quantity"]) == {"whole-block position", "whole-block position difference"}
    assert "unresolved" in set(whole["status"])


def test_fewer_than_three_seeds_decide_no_sub_claim():
    assert MIN_SEEDS == 3
    row = claim([0.5, 0.6])
    assert row["status"] == "unresolved" and row["reason"] == "fewer than 3 seeds"
    behaviour, probes = behaviour_table(paper_accuracy), probes_table(paper_profile)
    two = lambda frame: frame[frame["seed"] < 2]  # noqa: E731
    check = run_check(two(behaviour), two(probes), *(two(t) for t in erasure_tables(0.4)))
    for number in range(1, 6):
        verdict = rows(check.verdicts).loc[number]
        assert verdict["verdict"] == "inconclusive" and verdict["reason"].startswith("fewer than 3 seeds")
    gated = check.subclaims[check.subclaims["reading"] == "gated"]
    assert set(gated["status"]) == {"unresolved"} and set(gated["reason"]) == {"fewer than 3 seeds"}


def test_every_sub_claim_reports_its_interval_margin_and_n():
    check = run_check(behaviour_table(paper_accuracy), probes_table(paper_profile), *erasure_tables(0.4))
    sub = check.subclaims
    assert set(sub["reading"]) == {"gated", "ungated"}  # no twin columns: no gain reading
    assert sub[["margin", "n", "mean", "ci_low", "ci_high"]].notna().all().all()
    assert (sub["n"] >= len(SEEDS)).all() and set(sub["interval"]) == {"95% Student t"}
    gated = sub[sub["reading"] == "gated"]
    positions = gated[gated["subclaim"].str.contains("block|crossing")].set_index("subclaim")["quantity"]
    assert positions["parity mamba 95 % crossing - last block"] == "layer position"
    assert positions["dyck mamba - transformer 95 % crossing"] == "layer position difference"
    assert positions["parity mamba first block at 95 % - last block"] == "whole-block position"
    for number in range(1, 5):
        rests_on = rows(check.verdicts)["rests_on"][number]
        assert rests_on.startswith("6 seeds per sub-claim; 95% Student t intervals; margins:"), rests_on
    assert rows(check.verdicts)["rests_on"][5].startswith(
        "6 seeds (30 architecture x seed units) per sub-claim"
    )


def test_the_ungated_reading_uses_every_run_and_leaves_the_verdicts_gated():
    """A Transformer that never learned parity or s3: the verdict names it; the ungated
    reading decides the same sub-claims on its runs all the same."""
    unlearned = not_learned([("transformer", "parity"), ("transformer", "s3")])
    check = run_check(
        behaviour_table(paper_accuracy, unlearned), probes_table(paper_profile), *erasure_tables(0.4)
    )
    verdict = rows(check.verdicts).loc[2]
    assert verdict["verdict"] == "inconclusive" and "transformer did not learn" in verdict["reason"]
    statuses = verdict["ungated"].split(" | ")
    assert len(statuses) == 8 and all(text.endswith(": supported") for text in statuses), statuses
    ungated = check.subclaims[check.subclaims["reading"] == "ungated"]
    assert set(ungated["finding"]) == {2, 3, 4, 5} and "unlearned" not in set(ungated["status"])


def test_a_finding_without_sub_claims_is_not_reproduced_by_default():
    """all() over nothing is True: a finding must have sub-claims to be supported."""
    verdict = Finding(4).verdict(IntervalConfig())
    assert verdict["verdict"] == "inconclusive" and "no sub-claim" in verdict["reason"]


def test_finding_4_is_not_decided_by_one_family():
    behaviour, probes = behaviour_table(paper_accuracy), probes_table(paper_profile)
    only_gru = lambda frame: frame[frame["arch"] == "gru"]  # noqa: E731
    found, claims = verdicts(only_gru(behaviour), only_gru(probes))
    assert found[4] == "inconclusive" and "architectures not in this run" in rows(claims)["reason"][4]


def test_necessity_leaves_the_conv1d_ablated_models_out():
    """Finding 5 pools the five families; a Conv1D-ablated variant whose erasures do nothing
    must not move it (it enters finding 7 only)."""
    behaviour, probes = behaviour_table(paper_accuracy), probes_table(paper_profile)
    erasures, readability = erasure_tables(0.4)
    variant = lambda frame: frame[frame["arch"] == "mamba"].assign(arch="mamba_noconv")  # noqa: E731
    noconv_behaviour, noconv_erasures = variant(behaviour), variant(erasures)
    noconv_erasures.loc[noconv_erasures["method"] == "probe", "drop"] = 0.0
    with_variant = check_claims(
        pd.concat([behaviour, noconv_behaviour]),
        probes,
        pd.concat([erasures, noconv_erasures]),
        pd.concat([readability, variant(readability)]),
        scale="synthetic",
        train_length=TRAIN_LENGTH,
    )
    alone = run_check(behaviour, probes, erasures, readability)
    gated = lambda check: check.subclaims[  # noqa: E731
        (check.subclaims["reading"] == "gated") & (check.subclaims["finding"] == 5)
    ].reset_index(drop=True)
    pd.testing.assert_frame_equal(gated(with_variant), gated(alone))


LEARNABILITY = pd.DataFrame(
    [
        {"arch": "transformer", "task": "s3", "cap": 6000, "steps_to_95": None, "best_val_accuracy": 0.44},
        {"arch": "transformer", "task": "s3", "cap": 20000, "steps_to_95": None, "best_val_accuracy": 0.61},
        {
            "arch": "transformer",
            "task": "parity",
            "cap": 6000,
            "steps_to_95": 1950,
            "best_val_accuracy": 0.99,
        },
    ]
)


def test_an_inconclusive_verdict_says_what_would_decide_it_per_task():
    """The Transformer did not learn s3 or parity: finding 2 is inconclusive, its reason
    says per task what was decided and what was untested, with the steps each pair needs
    from the learnability tables."""
    unlearned = not_learned([("transformer", "parity"), ("transformer", "s3")])
    check = check_claims(
        behaviour_table(paper_accuracy, unlearned),
        probes_table(paper_profile),
        None,
        None,
        scale="synthetic",
        train_length=TRAIN_LENGTH,
        learnability=LEARNABILITY,
    )
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
    row = spread.evaluate(IntervalConfig())
    assert row["status"] == "unresolved" and row["seeds_to_decide"].endswith(" seeds")
    verdict = Finding(1, [spread]).verdict(IntervalConfig())
    assert verdict["verdict"] == "inconclusive"
    assert f"planning figure: {row['seeds_to_decide']} at its observed mean and sd would decide it" in (
        verdict["reason"]
    )


def near_the_edge(flip_at):
    """Three values whose difference clears the token-accuracy margin (0.01) exactly at
    confidence ``flip_at``."""
    from scipy import stats

    distance = 0.02
    sd = distance / stats.t.ppf((1 + flip_at) / 2, 2) * np.sqrt(3)
    return pd.Series([0.03 - sd, 0.03, 0.03 + sd])


def test_a_verdict_whose_deciding_sub_claim_changes_status_inside_the_band_is_fragile():
    low, high = FRAGILE_BAND
    fragile = Finding(1, [SubClaim("x", near_the_edge(0.97), TOKEN_ACCURACY)]).verdict(IntervalConfig())
    assert fragile["verdict"] == "reproduced" and fragile["fragile"]
    assert fragile["fragility"] == f"reproduced at {low:.0%}, inconclusive at {high:.0%}"
    robust = Finding(1, [SubClaim("x", near_the_edge(0.999), TOKEN_ACCURACY)]).verdict(IntervalConfig())
    assert robust["verdict"] == "reproduced" and not robust["fragile"]
    row = SubClaim("x", near_the_edge(0.97), TOKEN_ACCURACY).evaluate(IntervalConfig())
    assert row["fragile"] and abs(row["flip_confidence"] - 0.97) < 1e-9
    # An equivalence just inside the margin (finding 1's dyck recurrent - Mamba-2) is fragile too.
    inside = Finding(1, [SubClaim("x", -near_the_edge(0.96) + 0.02, TOKEN_ACCURACY)]).verdict(
        IntervalConfig()
    )
    assert inside["verdict"] == "not reproduced" and inside["fragile"]


def test_one_robust_contradiction_keeps_a_not_reproduced_verdict_robust():
    claims = [
        SubClaim("near", near_the_edge(0.97), TOKEN_ACCURACY),
        SubClaim("far below", pd.Series([-0.05, -0.051, -0.049]), TOKEN_ACCURACY),
    ]
    verdict = Finding(1, claims).verdict(IntervalConfig())
    assert verdict["verdict"] == "not reproduced" and not verdict["fragile"]
    assert verdict["deciding"] == "far below"


def test_the_claims_tables_have_their_documented_columns():
    check = run_check(behaviour_table(paper_accuracy), probes_table(paper_profile), *erasure_tables(0.4))
    assert list(check.subclaims.columns) == SUBCLAIM_COLUMNS
    assert {"deciding", "fragile", "fragility"} <= set(check.verdicts.columns)
    assert not check.verdicts["fragile"].any()


def test_a_run_whose_label_probes_did_not_converge_is_left_out_of_the_profiles_and_counted():
    """A non-converged probe could move a profile unseen: its run leaves findings 2-4 (like a
    run that did not learn) and claims.md counts it."""
    probes = probes_table(paper_profile).assign(converged=True)
    stuck = (probes["arch"] == "mamba") & (probes["task"] == "dyck") & (probes["seed"] >= 1)
    probes.loc[stuck & (probes["layer"] == 2), "converged"] = False
    check = run_check(behaviour_table(paper_accuracy), probes)
    verdict = rows(check.verdicts).loc[3]
    assert verdict["verdict"] == "inconclusive"
    assert "mamba on dyck: label probes did not converge at seed 1, 2, 3, 4, 5" in verdict["reason"]
    assert rows(check.verdicts).loc[1, "verdict"] == "reproduced"  # behaviour does not read probes
    markdown = claims_markdown(check, TRAIN_LENGTH)
    assert "| mamba | dyck | 6 of 6 | " in markdown and "| 0, 1, 1, 1, 1, 1 |" in markdown
