"""The maintenance scripts under tools/ on small files made here."""

import subprocess
import sys
from pathlib import Path

import pandas as pd

REPO = Path(__file__).resolve().parents[1]
HEADER = "s\th:m:s\tmax_rss\tmax_vms\tmax_uss\tmax_pss\tio_in\tio_out\tmean_load\tcpu_time\n"


def write_benchmark(root: Path, relative: str, wall: float, cpu: float) -> None:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(HEADER + f"{wall}\t0:00:00\t1\t1\t1\t1\t0\t0\t50\t{cpu}\n")


def test_run_costs_sums_stages_and_shares_of_training(tmp_path):
    for seed, train in ((0, 40.0), (1, 60.0)):
        write_benchmark(tmp_path, f"train/lstm/parity/seed{seed}.tsv", train, train / 2)
        write_benchmark(tmp_path, f"probes/lstm/parity/seed{seed}.tsv", 5.0, 4.0)
        write_benchmark(tmp_path, f"erasures/lstm/parity/seed{seed}.tsv", 15.0, 12.0)
    write_benchmark(tmp_path, "data/parity/train_L40.tsv", 2.0, 1.0)
    out = subprocess.run(
        [sys.executable, str(REPO / "tools" / "run_costs.py"), str(tmp_path)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "| train | 2 | 50 (100) |" in out
    assert "| erasures | 2 | 24 (30) |" in out
    assert "| data, tables, figures, claims | 1 | 1 (2) |" in out
    # (5 + 15) / 40 = 50 %, (5 + 15) / 60 = 33 %, all: 40 / 100 = 40 %
    assert "| lstm | 40-60 | 40% (33%-50%) |" in out
    # data + probes: 2 + 10 = 12 s of 100 s of training
    assert "neither training nor erasures: 12.0% of training wall time" in out


def write_claims(results, statuses, verdict, means=None):
    """A results directory whose finding 1 has sub-claims with these statuses (and means, 0.02 unless given)."""
    results.mkdir(parents=True)
    pd.DataFrame([{"finding": 1, "verdict": verdict}]).to_csv(results / "claims.csv", index=False)
    rows = [
        {
            "finding": 1,
            "reading": "gated",
            "subclaim": name,
            "n": 3,
            "mean": (means or {}).get(name, 0.02),
            "ci_low": 0.015,
            "ci_high": 0.025,
            "status": status,
        }
        for name, status in statuses.items()
    ]
    pd.DataFrame(rows).to_csv(results / "subclaims.csv", index=False)


def test_compare_claims_prints_the_sub_claims_whose_status_moved_and_only_those(tmp_path):
    tool = [sys.executable, str(REPO / "tools" / "compare_claims.py"), "a", "b"]
    write_claims(tmp_path / "a", {"x": "supported", "y": "unresolved"}, "inconclusive")
    write_claims(tmp_path / "b", {"x": "supported", "y": "unresolved"}, "inconclusive")
    same = subprocess.run(tool, cwd=tmp_path, capture_output=True, text=True)
    assert same.returncode == 0 and "identical (2 sub-claims)" in same.stdout
    write_claims(tmp_path / "d", {"x": "supported", "y": "unresolved"}, "inconclusive", {"y": 0.05})
    shifted = subprocess.run([*tool[:-1], "d"], cwd=tmp_path, capture_output=True, text=True)
    assert shifted.returncode == 0 and "identical" in shifted.stdout
    held = shifted.stdout.split("whose status held (B - A):\n")[1].splitlines()
    assert " y " in f" {held[1]} " and "0.03" in held[1]  # the largest shift comes first
    write_claims(tmp_path / "c", {"x": "supported", "y": "contradicted", "z": "supported"}, "not reproduced")
    moved = subprocess.run([*tool[:-1], "c"], cwd=tmp_path, capture_output=True, text=True)
    assert moved.returncode == 1
    assert "1 verdict(s) differ" in moved.stdout and "not reproduced" in moved.stdout
    assert "2 sub-claim status(es) differ" in moved.stdout
    lines = moved.stdout.splitlines()
    assert any(" y " in f" {line} " and "unresolved" in line and "contradicted" in line for line in lines)
    assert any("absent" in line and " z " in f" {line} " for line in lines)
    assert not any(" x " in f" {line} " for line in lines)


def test_selected_points_prints_the_selected_points_as_config_yaml(tmp_path):
    import yaml

    table = pd.DataFrame(
        [
            {
                "arch": "transformer",
                "task": "parity",
                "block": "sequential",
                "start_token": True,
                "lr": 0.0003,
                "batch_size": 64,
                "selected": True,
            },
            {
                "arch": "transformer",
                "task": "parity",
                "block": "default",
                "start_token": False,
                "lr": 0.001,
                "batch_size": 32,
                "selected": False,
            },
        ]
    )
    table.to_csv(tmp_path / "sweep.csv", index=False)
    config = {"sweep": {"blocks": {"transformer": {"default": {}, "sequential": {"rotary_pct": 1.0}}}}}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    out = subprocess.run(
        [
            sys.executable,
            str(REPO / "tools" / "selected_points.py"),
            str(tmp_path / "sweep.csv"),
            str(tmp_path / "config.yaml"),
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert yaml.safe_load(out) == {
        "training": {"overrides": {"transformer/parity": {"lr": 0.0003, "batch_size": 64}}},
        "model": {"options": {"transformer/parity": {"rotary_pct": 1.0, "start_token": True}}},
    }


def test_schedule_sweep_joins_sweeps_with_each_configs_decay_and_selects_across_them(tmp_path):
    """Two sweeps of Mamba-2 on parity under the study's config, one with a decay fraction
    of 0.5 for the pair: every seed of the 2400-step sweep reached the criterion sooner."""
    import yaml

    from statelayers.settings import train_settings

    base = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    for name, max_steps, decay, steps in [("short", 2400, 0.5, 2100.0), ("long", 3000, None, 2600.0)]:
        config = yaml.safe_load(yaml.safe_dump(base))
        if decay is not None:
            config["training"]["overrides"]["mamba2/parity"] = {"decay_fraction": decay}
        (tmp_path / name / "config").mkdir(parents=True)
        (tmp_path / name / "config" / "config.yaml").write_text(yaml.safe_dump(config))
        (tmp_path / name / "results" / "tables").mkdir(parents=True)
        row = {"arch": "mamba2", "task": "parity", "block": "default", "start_token": False, "lr": 0.001}
        row |= {"batch_size": 32, "seeds": 3, "reached": 3, "steps": steps, "sequences": 32 * steps}
        row |= {"validation_token_accuracy": 0.99, "max_steps": max_steps, "target_accuracy": 0.99}
        pd.DataFrame([row | {"selected": True, "chosen": True}]).to_csv(
            tmp_path / name / "results" / "tables" / "sweep.csv", index=False
        )
    out = tmp_path / "schedule.csv"
    subprocess.run(
        [
            sys.executable,
            str(REPO / "tools" / "schedule_sweep.py"),
            str(out),
            str(tmp_path / "short"),
            str(tmp_path / "long"),
        ],
        check=True,
    )
    table = pd.read_csv(out)
    assert table["decay_fraction"].tolist() == [
        0.5,
        train_settings(base, "mamba2", "parity")["decay_fraction"],
    ]
    assert table["selected"].tolist() == [True, False]
