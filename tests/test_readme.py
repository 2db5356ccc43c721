"""The README results section is generated from run files and replaces only itself."""

import pandas as pd
import pytest

from statelayers.report.readme import (
    END,
    START,
    behaviour_markdown,
    learnability_markdown,
    replace_section,
    results_section,
    sweep_markdown,
    training_markdown,
)
from statelayers.report.snakemake_log import complete_run


def summary():
    rows = []
    for arch, accuracy in (("lstm", 1.0), ("transformer", 0.5)):
        for length in (40, 120):
            rows.append(
                {
                    "arch": arch,
                    "task": "parity",
                    "eval_length": length,
                    "metric": "token_accuracy",
                    "mean": accuracy,
                    "ci_low": accuracy - 0.01,
                    "ci_high": accuracy + 0.01,
                    "n_seeds": 2,
                }
            )
    return pd.DataFrame(rows)


def training():
    """LSTM reached the criterion in both seeds, the Transformer in neither."""
    rows = [
        ("lstm", 0, 150, True, 0.995),
        ("lstm", 1, 250, True, 0.991),
        ("transformer", 0, 500, False, 0.52),
        ("transformer", 1, 500, False, 0.50),
    ]
    return pd.DataFrame(
        [
            {
                "arch": arch,
                "task": "parity",
                "seed": seed,
                "steps": steps,
                "reached": reached,
                "validation_token_accuracy": accuracy,
                "train_seconds": 1.0,
                "max_steps": 500,
                "target_accuracy": 0.99,
                "train_length": 40,
            }
            for arch, seed, steps, reached, accuracy in rows
        ]
    )


def test_training_table_gives_steps_seeds_reached_and_accuracy_at_the_training_length():
    table = training_markdown(training(), summary()).splitlines()
    assert table[0].endswith("| test token accuracy at L = 40 |")
    assert table[2] == "| parity | LSTM | 200 (150-250) of 500 | 2 of 2 | 0.993 | 1.000 [0.990, 1.010] |"
    assert table[3] == "| parity | Transformer | 500 of 500 | 0 of 2 | 0.510 | 0.500 [0.490, 0.510] |"


def test_behaviour_table_has_a_row_per_task_and_arch_and_a_column_per_length():
    table = behaviour_markdown(summary()).splitlines()
    assert table[0] == "| task | architecture | L = 40 | L = 120 |"
    assert table[2] == "| parity | LSTM | 1.000 [0.990, 1.010] | 1.000 [0.990, 1.010] |"
    assert len(table) == 4


def test_section_replaces_only_the_marked_block():
    claims = pd.DataFrame(
        [
            {
                "finding": 1,
                "verdict": "not reproduced",
                "reason": "CI below the bound",
                "rests_on": "n = 3 per sub-claim; 95% Student t intervals; margins: token accuracy 0.01",
                "scale": "3 seeds",
            }
        ]
    )
    section = results_section(claims, summary(), training(), date="2026-11-30", run_time="87 jobs")
    readme = f"# Title\n\nintro\n{START}\nold numbers\n{END}\n## Next\n"
    updated = replace_section(readme, section)
    assert updated.startswith("# Title\n\nintro\n") and updated.endswith("\n## Next\n")
    assert "old numbers" not in updated
    assert "| 1 | **not reproduced** | CI below the bound | n = 3 per sub-claim; 95% Student t" in updated
    assert "2026-11-30" in updated and "3 seeds" in updated
    assert "no sub-claim is decided from fewer than 3 seeds" in updated and "token accuracy 0.01" in updated
    assert replace_section(updated, section) == updated  # idempotent
    with pytest.raises(ValueError):
        replace_section("no markers", section)


def test_complete_run_reads_jobs_and_elapsed_time_of_finished_logs_only():
    finished = (
        "1 of 3 steps (33%) done\n3 of 3 steps (100%) done\nComplete log(s): x\nElapsed time: 0:41:07.5\n"
    )
    assert complete_run(finished) == (3, "0:41:07")
    assert complete_run("1 of 3 steps (33%) done\nError in rule train:\n") is None


def test_conv1d_table_appears_only_when_given_and_marks_significance():
    claims = pd.DataFrame(
        [{"finding": 7, "verdict": "reproduced", "reason": "", "rests_on": "", "scale": "2 seeds"}]
    )
    conv1d = pd.DataFrame(
        [
            {
                "family": "mamba",
                "task": "s3",
                "variant": "noconv_trained",
                "difference_pp": -12.34,
                "ci_low": -20.0,
                "ci_high": -4.5,
                "n_seeds": 3,
                "p_value": 0.01,
                "p_holm": 0.02,
                "significant": True,
            },
            {
                "family": "mamba2",
                "task": "dyck",
                "variant": "noconv_inference",
                "difference_pp": 0.25,
                "ci_low": -0.5,
                "ci_high": 1.0,
                "n_seeds": 3,
                "p_value": float("nan"),
                "p_holm": float("nan"),
                "significant": False,
            },
        ]
    )
    without = results_section(claims, summary(), training(), date="2026-12-01", run_time="10 jobs")
    assert "Conv1D ablation" not in without
    lines = results_section(
        claims, summary(), training(), "2026-12-01", "10 jobs", conv1d_summary=conv1d
    ).splitlines()
    assert "| Mamba | s3 | trained without | -12.3 [-20.0, -4.5] | 3 | 0.02 * |" in lines
    assert "| Mamba-2 | dyck | removed at inference | +0.2 [-0.5, +1.0] | 3 | n/a |" in lines


def test_sweep_table_marks_the_selected_point_and_the_points_that_reached_the_criterion():
    rows = [
        ("lstm", 0.001, 1, 300.0, 0.995, True),
        ("lstm", 0.003, 0, 500.0, 0.97, False),
        ("transformer", 0.001, 0, 500.0, 0.6, False),
        ("transformer", 0.003, 0, 500.0, 0.55, True),
    ]
    sweep = pd.DataFrame(
        [
            {
                "arch": arch,
                "task": "parity",
                "block": "default",
                "start_token": False,
                "lr": lr,
                "batch_size": 32,
                "seeds": 1,
                "reached": reached,
                "steps": steps,
                "validation_token_accuracy": accuracy,
                "max_steps": 500,
                "target_accuracy": 0.99,
                "selected": chosen,
                "chosen": chosen,
            }
            for arch, lr, reached, steps, accuracy, chosen in rows
        ]
    )
    table = sweep_markdown(sweep).splitlines()
    assert table[0] == "| task | architecture | lr 0.001 | lr 0.003 |"
    assert table[2] == "| parity | LSTM | **0.995 ✓ 300** | 0.970 |"
    assert table[3] == "| parity | Transformer | 0.600 | **0.550** |"


def test_a_sweep_over_blocks_and_start_tokens_gets_a_column_per_variant_at_its_best_learning_rate():
    rows = [  # block, start token, lr, reached, steps, accuracy, selected
        ("default", False, 0.001, 0, 600, 0.70, False),
        ("default", False, 0.003, 0, 600, 0.75, False),
        ("sequential", True, 0.001, 1, 250, 0.99, True),
        ("sequential", True, 0.003, 0, 600, 0.93, False),
    ]
    sweep = pd.DataFrame(
        [
            {
                "arch": "transformer",
                "task": "parity",
                "block": block,
                "start_token": start,
                "lr": lr,
                "batch_size": 32,
                "seeds": 1,
                "reached": reached,
                "steps": steps,
                "sequences": steps * 32,
                "validation_token_accuracy": accuracy,
                "max_steps": 600,
                "target_accuracy": 0.99,
                "selected": selected,
                "chosen": selected,
            }
            for block, start, lr, reached, steps, accuracy, selected in rows
        ]
    )
    table = sweep_markdown(sweep).splitlines()
    assert table[0] == "| task | architecture | default, no start token | sequential, start token |"
    assert table[2] == "| parity | Transformer | 0.750 (lr 0.003) | **0.990 ✓ 250 (lr 0.001)** |"


def test_learnability_table_gives_each_pairs_steps_to_the_thresholds_or_never():
    table = pd.DataFrame(
        [
            {
                "arch": "gru",
                "task": "s3",
                "cap": 600,
                "steps_to_95": 350,
                "steps_to_99": 400,
                "best_val_accuracy": 1.0,
                "wall_s": 61.2,
                "study_max_steps": 600,
            },
            {
                "arch": "transformer",
                "task": "s3",
                "cap": 6000,
                "steps_to_95": None,
                "steps_to_99": None,
                "best_val_accuracy": 0.412,
                "wall_s": 1830.0,
                "study_max_steps": 600,
            },
        ]
    )
    lines = learnability_markdown(table).splitlines()
    assert lines[0].startswith("| task | architecture | steps to 0.95 | steps to 0.99 |")
    assert lines[2] == "| s3 | GRU | 350 | 400 | 1.000 | 600 | 61 s | 600 |"
    assert lines[3] == "| s3 | Transformer | never | never | 0.412 | 6000 | 1830 s | 600 |"
    section = results_section(
        pd.DataFrame(
            [{"finding": 1, "verdict": "inconclusive", "reason": "r", "rests_on": "", "scale": "3 seeds"}]
        ),
        summary(),
        training(),
        date="2026-12-02",
        run_time="1 job",
        learnability=table,
        paper_steps=20000,
    )
    assert "at most 6000 steps" in section and "`config/paper.yaml` trains up to 20,000 steps" in section
