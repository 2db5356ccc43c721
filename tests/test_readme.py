"""README's verdict table and docs/results.md are generated from run files; README's block
replaces only itself, and every sweep point the config overrides is marked."""

import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from statelayers.report.readme import (
    DAGGER,
    END,
    START,
    behaviour_markdown,
    deciding_subclaims,
    learnability_markdown,
    paper_budget_markdown,
    readme_block,
    replace_section,
    results_document,
    sweep_markdown,
    training_markdown,
    verdict_markdown,
)
from statelayers.report.snakemake_log import complete_run
from statelayers.sweep import config_overrides, configured_point

REPO = Path(__file__).resolve().parents[1]


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


def test_readme_block_replaces_only_the_marked_block_with_a_line_per_finding_in_plain_words():
    claims = pd.DataFrame(
        [
            {
                "finding": 1,
                "claim": "LSTM and GRU beat the others on Dyck",
                "verdict": "not reproduced",
                "decided_by": "on Dyck, the recurrent models beat Mamba (sequence accuracy): not so",
                "robust": "8 of 9",
                "changed_by": "token accuracy for behaviour (inconclusive)",
                "fragile": True,
            },
            {
                "finding": 2,
                "claim": "Mamba jumps at the last layer",
                "verdict": "inconclusive",
                "decided_by": "x: no room to show it (+2 more)",
                "robust": "9 of 9",
                "changed_by": float("nan"),
                "fragile": False,
            },
        ]
    )
    block = readme_block(claims, run_time="87 jobs")
    readme = f"# Title\n\nintro\n{START}\nold numbers\n{END}\n## Next\n"
    updated = replace_section(readme, block)
    assert updated.startswith("# Title\n\nintro\n") and updated.endswith("\n## Next\n")
    assert "old numbers" not in updated and "last complete run here (87 jobs)" in updated
    assert "| # | the paper's claim | verdict | what decided it | same verdict under |" in updated
    assert (
        "| 1 | LSTM and GRU beat the others on Dyck | **not reproduced** (fragile) | on Dyck, the recurrent "
        "models beat Mamba (sequence accuracy): not so | 8 of 9 alternatives; not: token accuracy for "
        "behaviour (inconclusive) |"
    ) in updated
    assert "| 2 | Mamba jumps at the last layer | **inconclusive** | x: no room to show it (+2 more) | 9 of 9 alternatives |" in updated
    assert "(docs/results.md)" in updated
    assert replace_section(updated, block) == updated  # idempotent
    with pytest.raises(ValueError):
        replace_section("no markers", block)
    placeholder = readme_block(None)
    assert "make readme-results" in placeholder and "|" not in placeholder


def test_the_deciding_sub_claims_come_from_their_column_or_the_reason():
    assert deciding_subclaims({"deciding": "x; y", "reason": "z"}) == ["x", "y"]
    assert deciding_subclaims({"deciding": float("nan"), "reason": "z"}) == ["z"]
    stage = "Conv1D attribution did not run: add mamba_noconv to the architectures"
    assert deciding_subclaims({"reason": stage}) == [stage]  # only a status's colon is dropped


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
    without = results_document(claims, summary(), training(), date="2026-12-01", run_time="10 jobs")
    assert "Conv1D ablation" not in without
    lines = results_document(
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
    section = results_document(
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
    assert "(600, 6000 here)" in section and "`config/paper.yaml` trains up to 20,000 steps" in section


def sweep_point(arch, task, block, start, lr, reached, accuracy, selected, seeds=1):
    return {
        "arch": arch,
        "task": task,
        "block": block,
        "start_token": start,
        "lr": lr,
        "batch_size": 32,
        "seeds": seeds,
        "reached": reached,
        "steps": 300.0,
        "sequences": 9600.0,
        "validation_token_accuracy": accuracy,
        "max_steps": 600,
        "target_accuracy": 0.99,
        "selected": selected,
        "chosen": selected,
    }


BLOCKS = {"parallel": {"rotary_pct": 0.25}, "sequential": {"rotary_pct": 1.0}}


def test_configured_point_names_the_block_the_pairs_options_match():
    training = {"lr": 0.0003, "batch_size": 32, "max_steps": 600}
    point = configured_point({"rotary_pct": 1.0, "start_token": True, "heads": 4}, training, BLOCKS)
    assert point == {"block": "sequential", "start_token": True, "lr": 0.0003, "batch_size": 32}
    assert configured_point({"heads": 4}, training, BLOCKS)["block"] is None  # no block's options
    assert configured_point({}, training, {"default": {}})["block"] == "default"  # a family without blocks


def test_every_selected_point_the_config_overrides_is_marked_and_explained():
    one_seed = pd.DataFrame(
        [
            sweep_point("transformer", "parity", "sequential", True, 0.0003, 0, 0.79, False),
            sweep_point("transformer", "parity", "sequential", True, 0.001, 1, 0.998, True),
            sweep_point("transformer", "dyck", "parallel", False, 0.0003, 1, 0.995, True),
            sweep_point("lstm", "s3", "default", True, 0.003, 1, 1.0, True),
        ]
    )
    three_seeds = pd.DataFrame(
        [
            sweep_point("transformer", "parity", "sequential", True, 0.0003, 3, 0.995, True, seeds=3),
            sweep_point("transformer", "parity", "sequential", True, 0.001, 1, 0.70, False, seeds=3),
        ]
    )
    sweeps = {"benchmarks/sweep.csv": one_seed, "benchmarks/sweep_three.csv": three_seeds}
    configured = {
        ("transformer", "parity"): {
            "block": "sequential",
            "start_token": True,
            "lr": 0.0003,
            "batch_size": 32,
        },
        ("transformer", "dyck"): {"block": "sequential", "start_token": True, "lr": 0.0003, "batch_size": 32},
        ("lstm", "s3"): {"block": "default", "start_token": True, "lr": 0.003, "batch_size": 32},
    }
    blocks = {"transformer": BLOCKS, "lstm": {"default": {}}}
    found = config_overrides(sweeps, configured, blocks)
    assert set(found) == {
        "benchmarks/sweep.csv"
    }  # the three-seed sweep's selection is what the config trains
    parity, dyck = sorted(found["benchmarks/sweep.csv"], key=lambda entry: entry["task"], reverse=True)
    assert parity["differs"] == {"lr": (0.001, 0.0003)}
    assert parity["selected_by"] == ["benchmarks/sweep_three.csv"]
    assert parity["at_config"]["validation_token_accuracy"] == 0.79
    assert dyck["differs"] == {"block": ("parallel", "sequential"), "start_token": (False, True)}
    assert dyck["at_config"] is None and dyck["selected_by"] == []

    text = results_document(None, sweeps=sweeps, configured=configured, blocks=blocks)
    assert "**0.998 ✓ 300 (lr 0.001)** †" in text  # the overridden selection
    assert "**1.000 ✓ 300 (lr 0.003)** |" in text  # the LSTM trains as selected: unmarked
    assert (
        f"{DAGGER} `config/config.yaml` trains the Transformer on parity at lr 0.0003 (`training.overrides`), "
        "not at the selected lr 0.001; this sweep measured 0.790 validation token accuracy there, "
        "0 of 1 seed(s) reaching the criterion; `benchmarks/sweep_three.csv` selects that point." in text
    )
    assert (
        "trains the Transformer on dyck at the sequential block, a start token (`model.options`), "
        "not at the selected the parallel block, no start token." in text
    )
    assert text.count(DAGGER) == 2 + 2 * 2  # two marked cells, two notes, and each table's legend
    unmarked = sweep_markdown(one_seed)  # without overrides nothing is marked
    assert DAGGER not in unmarked


def test_a_selected_block_the_config_does_not_name_is_not_compared():
    old = pd.DataFrame([sweep_point("transformer", "parity", "default", False, 0.001, 1, 0.9, True)])
    configured = {
        ("transformer", "parity"): {
            "block": "sequential",
            "start_token": False,
            "lr": 0.001,
            "batch_size": 32,
        }
    }
    assert config_overrides({"old.csv": old}, configured, {"transformer": BLOCKS}) == {}


def run_tool(root: Path) -> subprocess.CompletedProcess:
    tool = [sys.executable, str(REPO / "tools" / "readme_results.py"), "README.md"]
    return subprocess.run(tool, cwd=root, check=True, capture_output=True, text=True)


def test_tool_without_a_run_says_so_in_readme_and_writes_the_benchmark_sections(tmp_path):
    (tmp_path / "README.md").write_text(f"# R\n{START}\nold\n{END}\n## Layout\n")
    (tmp_path / "benchmarks").mkdir()
    (tmp_path / "benchmarks" / "sweep.csv").write_text(
        "arch,task,lr,batch_size,seeds,reached,steps,validation_token_accuracy,max_steps,target_accuracy,"
        "selected,chosen\nlstm,parity,0.001,32,1,1,150.0,0.995,500,0.99,True,True\n"
    )
    run_tool(tmp_path)
    readme = (tmp_path / "README.md").read_text()
    assert "No complete run in this directory" in readme and readme.endswith(f"{END}\n## Layout\n")
    results = (tmp_path / "docs" / "results.md").read_text()
    assert results.startswith("# Results\n") and "No complete run in this directory" in results
    assert "### `benchmarks/sweep.csv`" in results and "| parity | LSTM |" in results


def test_tool_writes_the_verdicts_to_readme_and_the_full_run_to_docs_results(tmp_path):
    logs = tmp_path / ".snakemake" / "log"
    logs.mkdir(parents=True)
    done = "{n} of {n} steps (100%) done\nElapsed time: {t}.5\n"
    (logs / "2026-12-01T030000.000001.snakemake.log").write_text(done.format(n=156, t="0:42:28"))
    (logs / "2026-12-01T040000.000001.snakemake.log").write_text(done.format(n=73, t="0:36:47"))
    (logs / "2026-12-01T050000.000001.snakemake.log").write_text("1 of 9 steps (11%) done\n")  # failed
    tables = tmp_path / "results" / "tables"
    tables.mkdir(parents=True)
    claims = (
        "finding,claim,verdict,decided_by,robust,changed_by,reason,deciding,fragile,fragility,measured,rests_on,paper,scale\n"
        "7,Mamba needs its convolution,reproduced,Mamba loses S3 accuracy: so,,,ok,mamba s3 drop; mamba parity drop,True,"
        "inconclusive at 99%,m: +1 [+1 to +2],n = 3,p,3 seeds\n"
    )
    (tmp_path / "results" / "claims.csv").write_text(claims)
    (tables / "behaviour_summary.csv").write_text(
        "arch,task,eval_length,metric,mean,ci_low,ci_high,n_seeds\nlstm,parity,40,token_accuracy,1.0,1.0,1.0,2\n"
        "lstm,parity,40,sequence_accuracy,0.9,0.8,1.0,2\n"
    )
    (tables / "behaviour.csv").write_text(
        "arch,task,seed,eval_length,token_accuracy,sequence_accuracy,n_sequences\n"
        "lstm,parity,0,40,1.0,1.0,64\nlstm,parity,1,40,0.999,0.95,64\nlstm,parity,0,80,0.9,0.1,64\n"
    )
    (tmp_path / "results" / "robustness.csv").write_text(
        "finding,alternative,verdict,deciding,same\n7,L0 is the embedding,inconclusive,x,False\n"
    )
    (tmp_path / "results" / "subclaims.csv").write_text(
        "finding,reading,subclaim,group,decides,kind,bound,quantity,margin,room,interval,n,seeds,mean,ci_low,"
        "ci_high,sd,status,reason,flip_confidence,fragile,seeds_to_decide,plain\n"
        "7,decided,s3 loss,,True,greater,0.0,pp,1.0,90.0,95% Student t,3,3,12.6,10.1,15.1,1.0,supported,,0.999,"
        "False,,loses\n"
        "7,decided,dyck gap,,True,greater,0.0,pp,1.0,0.5,95% Student t,3,3,0.1,0.0,0.2,0.05,no room,room 0.5 < 2 x "
        "margin,,False,,gap\n"
    )
    (tables / "training.csv").write_text(
        "arch,task,seed,steps,reached,validation_token_accuracy,train_seconds,max_steps,target_accuracy,train_length\n"
        "lstm,parity,0,150,True,0.995,30.0,500,0.99,40\n"
    )
    (tables / "conv1d_summary.csv").write_text(
        "family,task,variant,difference_pp,ci_low,ci_high,n_seeds,p_value,p_holm,significant\n"
        "mamba,s3,noconv_trained,-7.6,-8.3,-7.0,2,0.05,0.4,False\n"
    )
    figures = tmp_path / "results" / "figures"
    figures.mkdir()
    (figures / "probe_profiles.png").write_bytes(b"\x89PNG probe figure")
    readme = tmp_path / "README.md"
    readme.write_text(f"# R\n{START}\nold\n{END}\n")
    run_tool(tmp_path)
    text, results = readme.read_text(), (tmp_path / "docs" / "results.md").read_text()
    assert "(156 jobs, Snakemake wall time 0:42:28; then 73 jobs" in text and "2026" not in text
    assert "| 7 | Mamba needs its convolution | **reproduced** (fragile) | Mamba loses S3 accuracy: so | not recomputed |" in text
    assert "Conv1D" not in text and "training" not in text.lower()  # README holds the verdicts only
    assert (tmp_path / "docs" / "probe_profiles.png").read_bytes() == b"\x89PNG probe figure"
    assert "](probe_profiles.png)" in results  # relative to docs/results.md
    assert "Run of 2026-12-01 (156 jobs, Snakemake wall time 0:42:28; then 73 jobs" in results
    assert (
        "| 7 | **reproduced** (fragile: inconclusive at 99%) | mamba s3 drop; mamba parity drop | ok | n = 3 |"
        in results
    )
    assert "| Mamba | s3 | trained without | -7.6 [-8.3, -7.0] | 2 | 0.4 |" in results
    assert "| parity | LSTM | 150 of 500 | 1 of 1 | 0.995 | 1.000 [1.000, 1.000] |" in results
    assert "| parity | LSTM | 0.900 [0.800, 1.000] |" in results  # sequence accuracy
    assert "| parity | LSTM | 0, 1 | 1.000, 0.999 | 1.000, 0.950 |" in results
    assert "| 7 | reproduced | **inconclusive** |" in results
    assert "| 7 | s3 loss | 3 | +12.600 [+10.100, +15.100] | > +0.000 | 1 (pp) | 90 | supported | 99.9% |" in results
    assert "| 7 | dyck gap | 3 | +0.100 [+0.000, +0.200] | > +0.000 | 1 (pp) | 0.5 | no room (room 0.5 < 2 x margin) |" in results
    assert "Hyper-parameter sweeps" not in results  # no sweep here
    (tmp_path / "results" / "claims.csv").write_text(claims.replace("m: +1 [+1 to +2]", ""))  # 7 not measured
    (tables / "sweep.csv").write_text(
        "arch,task,lr,batch_size,seeds,reached,steps,validation_token_accuracy,max_steps,target_accuracy,"
        "selected,chosen\nlstm,parity,0.001,32,1,1,150.0,0.995,500,0.99,True,True\n"
    )
    (tmp_path / "benchmarks").mkdir()
    (tmp_path / "benchmarks" / "learnability.csv").write_text(
        "arch,task,cap,steps_to_95,steps_to_99,best_val_accuracy,wall_s,default_val_accuracy,study_max_steps\n"
        "lstm,parity,6000,850,,0.97,412.3,0.8,1300\n"
    )
    run_tool(tmp_path)
    results = (tmp_path / "docs" / "results.md").read_text()
    assert "Conv1D ablation" not in results
    assert "### `results/tables/sweep.csv`" in results
    assert "| parity | LSTM | **0.995 ✓ 150** |" in results  # a sweep table of before the blocks
    assert "| parity | LSTM | 850 | never | 0.970 | 6000 | 412 s | 1300 |" in results
    assert "`config/paper.yaml` trains up to 20,000 steps" in results


def test_the_paper_budget_note_says_where_a_pair_learns_or_its_best_and_slope():
    outcomes = pd.DataFrame(
        [
            {"arch": "mamba", "task": "s3", "reached": True, "steps_to_95": 13000,
             "best_val_accuracy": 0.97, "slope_per_1000": 0.01},
            {"arch": "transformer", "task": "s3", "reached": False, "steps_to_95": None,
             "best_val_accuracy": 0.612, "slope_per_1000": 0.0123},
        ]
    )  # fmt: skip
    note = paper_budget_markdown(outcomes, 20000)
    assert note.startswith("Within the paper's 20000 steps (`config/paper.yaml`; seed 0")
    assert "Mamba on s3 reaches validation 0.95 at step 13000" in note
    assert (
        "Transformer on s3 does not reach it (best validation accuracy 0.612, +0.012 per 1 000 steps" in note
    )
    assert paper_budget_markdown(outcomes.iloc[:0], 20000) == ""
    assert note in readme_block(None, budget_note=note) and note in readme_block(pd.DataFrame(), "x", note)


def test_a_schedule_sweep_gets_a_column_per_budget_and_says_when_it_sets_a_budget():
    rows = [
        sweep_point("mamba2", "parity", "default", False, 0.001, 2, 0.988, True, seeds=3)
        | {"max_steps": 3000, "decay_fraction": 0.5},
        sweep_point("mamba2", "parity", "default", False, 0.001, 0, 0.983, False, seeds=3)
        | {"max_steps": 2400, "decay_fraction": 0.5},
    ]
    text = results_document(None, sweeps={"benchmarks/sweep_schedule.csv": pd.DataFrame(rows)})
    assert "| task | architecture | 2400 steps, decay 0.5 | 3000 steps, decay 0.5 |" in text
    assert "| parity | Mamba-2 | 0.983 (lr 0.001) | **0.988 (lr 0.001)** |" in text
    assert "sets the pair's budget only where every seed reached the" in text
    plain = results_document(
        None, sweeps={"benchmarks/sweep.csv": pd.DataFrame(rows[:1]).drop(columns="decay_fraction")}
    )
    assert "A schedule sweep" not in plain


def test_the_extension_s_verdicts_stand_apart_from_the_reproduction_s_and_only_where_it_ran():
    claims = pd.DataFrame([{"finding": 2, "claim": "c", "verdict": "inconclusive", "decided_by": "d"}])
    extension = pd.DataFrame(
        [{"stand_in": "mamba_signed", "family": "mamba", "finding": 4, "verdict": "reproduced",
          "decided_by": "Mamba's S3 profile is closer to its Parity profile"}]  # fmt: skip
    )
    block = readme_block(claims, "87 jobs", extension=extension)
    table_end = block.index("| 2 | c |")
    line = next(line for line in block.splitlines() if line.startswith("Extension, not the reproduction"))
    assert block.index(line) > table_end and "config/s3.yaml" in line
    assert (
        "finding 4 with Mamba with signed transitions in Mamba's place **reproduced** "
        "(Mamba's S3 profile is closer to its Parity profile)" in line
    )
    assert "Extension" not in readme_block(claims, "87 jobs", extension=extension.iloc[:0])
    assert "Extension" not in readme_block(claims, "87 jobs")
