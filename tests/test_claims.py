"""Verdict rules on synthetic tables built to reproduce, or to contradict, each finding."""

import numpy as np
import pandas as pd

from statelayers.claims import check_claims, claims_markdown

ARCHS = ["transformer", "mamba", "mamba2", "lstm", "gru"]
SEEDS = [0, 1, 2, 3]
LENGTHS = [40, 80, 120]


def noisy(value, seed, scale=0.005):
    return float(np.clip(value + np.random.default_rng(seed).normal(0, scale), 0, 1))


def behaviour_table(accuracy):
    """``accuracy(arch, task) -> float``, the same at every length, plus small seed noise."""
    return pd.DataFrame(
        [
            {
                "arch": a,
                "task": t,
                "seed": s,
                "eval_length": n,
                "token_accuracy": 1.0 if accuracy(a, t) == 1.0 else noisy(accuracy(a, t), s * 7 + n),
            }
            for a in ARCHS
            for t in ("parity", "s3", "dyck")
            for s in SEEDS
            for n in LENGTHS
        ]
    )


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


def ablation_tables(probe_drop):
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
                            "drop": noisy(probe_drop, s + n, 0.02),
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


def verdicts(behaviour, probes, ablations=None, readability=None):
    claims = check_claims(behaviour, probes, ablations, readability, scale="synthetic")
    return dict(zip(claims["finding"], claims["verdict"])), claims


def test_paper_like_tables_reproduce_findings_1_to_5():
    found, claims = verdicts(
        behaviour_table(paper_accuracy), probes_table(paper_profile), *ablation_tables(0.4)
    )
    assert [found[i] for i in range(1, 6)] == ["reproduced"] * 5, claims.to_string()
    assert found[6] == found[7] == "inconclusive"
    assert "Claims check" in claims_markdown(claims)


def test_reversed_behaviour_is_not_reproduced():
    flipped = lambda a, t: {"transformer": 0.99, "mamba": 0.8, "mamba2": 0.8}.get(a, 0.6)  # noqa: E731
    found, _ = verdicts(behaviour_table(flipped), probes_table(paper_profile))
    assert found[1] == "not reproduced"


def test_architecture_fixed_profiles_do_not_reproduce_the_inversion():
    """If every architecture kept its parity profile on Dyck, findings 3 and 4 fail."""
    fixed = lambda a, t: paper_profile(a, "parity")  # noqa: E731
    found, _ = verdicts(behaviour_table(paper_accuracy), probes_table(fixed))
    assert found[3] == "not reproduced"
    assert found[4] == "inconclusive"  # s3 is as close to dyck as to parity: no decision


def test_s3_behaving_like_dyck_contradicts_finding_4():
    like_dyck = lambda a, t: paper_profile(a, "dyck" if t == "s3" else t)  # noqa: E731
    found, _ = verdicts(behaviour_table(paper_accuracy), probes_table(like_dyck))
    assert found[4] == "not reproduced"


def test_ablation_no_better_than_random_is_not_reproduced():
    found, _ = verdicts(behaviour_table(paper_accuracy), probes_table(paper_profile), *ablation_tables(0.0))
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
    assert "interventions stage did not run" in reasons[5]


def conv1d_rows(lost_pp):
    """The Conv1D table for Mamba and its twin; ``lost_pp[task]`` = accuracy lost without Conv1D."""
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
    claims = check_claims(
        behaviour_table(paper_accuracy), probes_table(paper_profile), None, None, "synthetic", **tables
    )
    return claims.set_index("finding").loc[number]


def conv1d_verdict(lost_pp):
    return finding(7, conv1d=None if lost_pp is None else conv1d_rows(lost_pp))


def test_conv1d_finding_follows_the_twin_comparison():
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
    probes, ablations, patching = [], [], []
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
                ablations.append(
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
    return pd.DataFrame(probes), pd.DataFrame(ablations), pd.DataFrame(patching)


def pretrained_verdict(probes, ablations, patching):
    return finding(6, pretrained_probes=probes, pretrained_ablations=ablations, patching=patching)


def test_pretrained_finding_follows_bottleneck_readability_and_patching():
    bottleneck = lambda block: 0.8 if block in (7, 8) else 0.05  # noqa: E731  (paper's L6-L7)
    paper = pretrained_verdict(*pretrained_tables(bottleneck, 0.0005, 0.97))
    assert paper["verdict"] == "reproduced", paper["measured"]
    # The bottleneck at the last block, or a last-block ablation that hurts, contradicts it.
    late = lambda block: 0.8 if block == 12 else 0.05  # noqa: E731
    assert pretrained_verdict(*pretrained_tables(late, 0.0005, 0.97))["verdict"] == "not reproduced"
    assert pretrained_verdict(*pretrained_tables(bottleneck, 0.2, 0.97))["verdict"] == "not reproduced"
    assert pretrained_verdict(*pretrained_tables(bottleneck, 0.0005, 0.3))["verdict"] == "not reproduced"
    probes, ablations, patching = pretrained_tables(bottleneck, 0.0005, 0.97)
    absent = pretrained_verdict(probes[probes["arch"] != "mamba-130m"], ablations, patching)
    assert absent["verdict"] == "inconclusive" and "mamba-130m" in absent["reason"]
