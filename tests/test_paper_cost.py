"""tools/paper_cost.py on a synthetic run, curves and overlay made here."""

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import yaml

REPO = Path(__file__).resolve().parents[1]
HEADER = "s\th:m:s\tmax_rss\tmax_vms\tmax_uss\tmax_pss\tio_in\tio_out\tmean_load\tcpu_time\n"
SECONDS_PER_STEP = 3.6  # the synthetic run's LSTM: 100 steps in 360 s at batch 32, length 40


def write_run(root: Path) -> Path:
    """A finished run: one trained LSTM (3.6 s per step) and one evaluate job of 36 s."""
    run = root / "results"
    model = run / "models" / "lstm" / "parity" / "seed0"
    model.mkdir(parents=True)
    meta = {
        "steps": 100,
        "train_seconds": 100 * SECONDS_PER_STEP,
        "training": {"batch_size": 32, "grad_accumulation": 1},
        "train_length": 40,
        "target_params": 830000,
    }
    (model / "model.json").write_text(json.dumps(meta))
    bench = run / "benchmarks" / "evaluate" / "lstm" / "parity" / "seed0.tsv"
    bench.parent.mkdir(parents=True)
    bench.write_text(HEADER + "36.0\t0:00:36\t1\t1\t1\t1\t0\t0\t50\t30.0\n")
    return run


def write_curves(root: Path) -> Path:
    """LSTM on parity meets the rule (two checks at 0.99) at step 350; on s3 never, to 400."""
    steps = list(range(50, 401, 50))
    rows = [("parity", s, 0.5 if s < 300 else 1.0) for s in steps if s <= 350]
    rows += [("s3", s, 0.5) for s in steps]
    frame = pd.DataFrame(rows, columns=["task", "step", "validation_token_accuracy"])
    path = root / "curves.csv"
    frame.assign(arch="lstm", cap=400, validation_sequence_accuracy=0.0).to_csv(path, index=False)
    return path


def price(root: Path, *options: str, seeds=(0,), batch=32, gpu: Path | None = None) -> str:
    overlay = {
        "architectures": ["lstm"],
        "tasks": ["parity", "s3"],
        "seeds": list(seeds),
        "data": {"test": 256},
        "training": {"max_steps": 1000, "eval_every": 50, "threads": 1, "batch_size": batch},
        "pretrained": {"enabled": False},
        "patching": {"enabled": False},
    }
    root.mkdir(parents=True, exist_ok=True)
    (root / "paper.yaml").write_text(yaml.safe_dump(overlay))
    command = [
        sys.executable,
        str(REPO / "tools" / "paper_cost.py"),
        "--run",
        str(write_run(root) if not (root / "results").exists() else root / "results"),
        "--base",
        str(REPO / "config" / "config.yaml"),
        "--paper",
        str(root / "paper.yaml"),
        "--curves",
        str(write_curves(root)),
        *options,
        *(["--gpu-throughput", str(gpu)] if gpu else []),
    ]
    return subprocess.run(command, capture_output=True, text=True, check=True, cwd=root).stdout


def row(out: str, first: str) -> list[str]:
    """The cells of the table row whose first cells start with ``first``."""
    line = next(line for line in out.splitlines() if line.startswith(f"| {first} |"))
    return [cell.strip() for cell in line.strip("|").split("|")]


def test_a_curve_meeting_the_rule_at_step_s_costs_s_steps_and_one_that_never_does_costs_max_steps(tmp_path):
    out = price(tmp_path)
    parity, s3 = row(out, "lstm | parity"), row(out, "lstm | s3")
    assert parity[2] == "350" and "curve meets 0.99 at 300" in parity[3]
    assert s3[2] == "1000" and "never meets the rule" in s3[3]
    assert parity[5] == f"{SECONDS_PER_STEP:.4g}"  # batch 32 as measured: the step unscaled
    # (350 + 1000) steps x 3.6 s = 4860 s
    assert row(out, "train")[1:3] == ["2", "1.35"]


def test_hours_scale_with_seeds_and_a_larger_batch_scales_the_step_by_its_tokens(tmp_path):
    one = float(row(price(tmp_path / "a"), "train")[2])
    three = price(tmp_path / "b", seeds=(0, 1, 2))
    assert row(three, "train")[1] == "6" and float(row(three, "train")[2]) == round(3 * one, 2)
    doubled = price(tmp_path / "c", batch=64)
    assert float(row(doubled, "train")[2]) == round(2 * one, 2)
    assert "1280 -> 2560 tokens per step" in doubled and "scaled" in row(doubled, "lstm | parity")[-1]


def test_after_training_stages_scale_by_their_sequences_and_unmeasured_ones_are_not_priced(tmp_path):
    out = price(tmp_path, seeds=(0, 1))
    evaluate = row(out, "evaluate")
    # 4 jobs x 36 s x 256 / 128 test sequences = 288 s
    assert evaluate[1:3] == ["4", "0.08"] and "data.test 128 -> 256" in evaluate[-1]
    assert "not priced" in row(out, "erasures")[-1]


def test_doubling_the_cores_halves_the_wall_time_until_the_longest_job_bounds_it(tmp_path):
    seeds = (0, 1, 2, 3)  # 4 x (1260 + 3600) s = 5.4 h; the longest job is 1 h

    def wall(cores: int) -> float:
        root = tmp_path / str(cores)
        line = next(
            line for line in price(root, "--cores", str(cores), seeds=seeds).splitlines() if "CPU" in line
        )
        return float(line.split("**")[1].removesuffix(" h"))

    # the 8 evaluate jobs add 8 x 72 s = 0.16 h
    assert wall(1) == 5.56 and wall(2) == 2.78 and wall(4) == 1.39
    assert wall(8) == 1.0 and wall(16) == 1.0


def test_without_a_gpu_measurement_the_gpu_is_not_priced_and_with_one_it_is(tmp_path):
    out = price(tmp_path / "none")
    assert "One GPU, 4 jobs at once: not priced" in out
    gpu = tmp_path / "gpu_throughput.csv"
    pd.DataFrame({"k": [1, 4], "ms_lstm": [1000.0, 4000.0]}).to_csv(gpu, index=False)
    priced = price(tmp_path / "measured", seeds=(0, 1, 2, 3), gpu=gpu)
    line = next(line for line in priced.splitlines() if "One GPU" in line)
    # 4 x (350 + 1000) steps x 4 s / 4 = 1.5 h, at least the longest job (1.11 h)
    assert "**1.50 h**" in line and "measured in" in line and "estimated" in line


def test_every_printed_figure_is_labelled_measured_estimated_or_not_priced(tmp_path):
    out = price(tmp_path, "--cores", "8", seeds=(0, 1))
    rows = [line for line in out.splitlines() if line.startswith("| ") and not line.startswith("| ---")]
    body = [line for line in rows if not line.startswith(("| arch |", "| stage |"))]
    assert len(body) >= 5
    for line in body:
        assert any(word in line.split("|")[-2] for word in ("measured", "estimated", "not priced")), line
    bullets = [line for line in out.splitlines() if line.startswith("- ")]
    assert len(bullets) == 2 and all("estimated" in line or "not priced" in line for line in bullets)


def test_a_run_without_trained_models_stops_with_a_message(tmp_path):
    (tmp_path / "results").mkdir()
    result = subprocess.run(
        [sys.executable, str(REPO / "tools" / "paper_cost.py"), "--run", str(tmp_path / "results")],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert result.returncode != 0 and "no model.json" in result.stderr and "make run" in result.stderr
