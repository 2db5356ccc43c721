"""The claims rule itself (Snakemake running the real script on the default config) draws
known verdicts from recorded tables built to give them: a workflow-level test that a
verdict can be decided, both ways, at the default three seeds, and that a sub-claim
without room decides nothing."""

import pandas as pd
import pytest
from test_claims import (
    erasure_tables,
    behaviour_table,
    not_learned,
    paper_accuracy,
    paper_profile,
    probes_table,
    study_profile,
)
from workflow_run import copy_workflow, snakemake

pytestmark = pytest.mark.workflow

GRADUAL = [0.5, 0.55, 0.76, 0.98, 1.0]  # the paper's Transformer on Parity: no jump at the last block


def profile(arch, task):
    """The paper's profiles (its Transformer at the ceiling on Dyck from L0), except an LSTM
    that rises gradually on parity and s3."""
    return GRADUAL if arch == "lstm" and task in ("parity", "s3") else paper_profile(arch, task)


def test_the_claims_rule_decides_reproduced_not_reproduced_and_inconclusive(tmp_path):
    """Three seeds; the Transformer never learns s3, whose learnability row says it needs
    more than 20 000 steps; the LSTM's gradual profile contradicts finding 2 on the runs
    that learned; the Transformer's Dyck profile at its ceiling from L0 leaves finding 3's
    sub-claim about it no room. Snakemake runs only the claims rule on these tables."""
    root = copy_workflow(tmp_path)
    three = lambda frame: frame[frame["seed"] < 3]  # noqa: E731
    behaviour = three(behaviour_table(paper_accuracy, not_learned([("transformer", "s3")])))
    erasures, readability = (three(table) for table in erasure_tables(0.4))
    tables = root / "results" / "tables"
    tables.mkdir(parents=True)
    for name, frame in {
        "behaviour": behaviour,
        "probes": three(probes_table(profile)),
        "erasures": erasures,
        "readability_vs_causality": readability,
    }.items():
        frame.to_csv(tables / f"{name}.csv", index=False)
    (root / "benchmarks").mkdir()
    pd.DataFrame(
        [{"arch": "transformer", "task": "s3", "cap": 20000, "steps_to_95": None, "best_val_accuracy": 0.61}]
    ).to_csv(root / "benchmarks" / "learnability_s3.csv", index=False)

    snakemake(root, "results/claims.csv", "--allowed-rules", "claims")

    claims = pd.read_csv(root / "results" / "claims.csv").set_index("finding")
    assert claims["verdict"].to_dict() == {
        1: "reproduced",
        2: "not reproduced",
        3: "inconclusive",
        4: "inconclusive",
        5: "reproduced",
        6: "inconclusive",
        7: "inconclusive",
    }
    reason = claims.loc[2, "reason"]
    assert reason.startswith("contradicted on the runs that learned: ")
    assert "parity lstm 95 % crossing - last block" in reason.split(". ")[0]
    assert "Untested: transformer did not learn s3" in claims.loc[2, "reason"]
    assert "it needs more than 20000 steps" in claims.loc[4, "reason"]
    assert "s3 lstm 95 % crossing - last block" in claims.loc[2, "deciding"]
    subclaims = pd.read_csv(root / "results" / "subclaims.csv")
    decided = subclaims[(subclaims["reading"] == "decided") & subclaims["decides"]]
    assert {"supported", "contradicted", "unlearned", "no room"} <= set(decided["status"])
    assert claims.loc[3, "deciding"] == "dyck transformer: 2 - 95 % crossing"
    assert "no room" in claims.loc[3, "reason"]
    assert subclaims.loc[subclaims["n"] > 0, "room"].notna().all()  # no data, no room to state
    robustness = pd.read_csv(root / "results" / "robustness.csv")
    assert set(robustness["finding"]) == {1, 2, 3, 4, 5} and robustness["verdict"].notna().all()
    assert claims.loc[1, "robust"].endswith(f" of {robustness['alternative'].nunique()}")
    assert "| 2 | **not reproduced**" in (root / "results" / "claims.md").read_text()
