"""The Snakemake workflow end to end on config/test.yaml, and what a config change reruns."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import matplotlib.image
import pandas as pd
import pytest
import torch
import yaml
from study_config import with_bad_value
from workflow_run import REPO, SNAKEMAKE, copy_workflow, listed_jobs, overlay, planned_jobs, snakemake

from statelayers.report import figures

PER_RUN_RULES = {"train", "evaluate", "probes", "erasures"}

pytestmark = pytest.mark.workflow


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    """A complete run of config/test.yaml in a copy of the workflow."""
    root = copy_workflow(tmp_path_factory.mktemp("workflow"))
    snakemake(root, "--configfile", "config/test.yaml")
    return root


def test_tables_are_complete_and_non_trivial(workdir):
    tables = workdir / "results" / "tables"
    behaviour = pd.read_csv(tables / "behaviour.csv")
    assert len(behaviour) == 5 * 3 * 1 * 2
    assert set(behaviour["eval_length"]) == {8, 12}
    assert behaviour["token_accuracy"].between(0, 1).all()
    assert behaviour["token_accuracy"].std() > 0

    probes = pd.read_csv(tables / "probes.csv")
    assert set(probes["layer"]) == {0, 1, 2}
    assert probes["token_baseline"].between(0, 1).all()
    assert set(probes["arch"]) == {"transformer", "mamba", "mamba2", "lstm", "gru"}
    assert set(probes.loc[probes["task"] == "dyck", "target"]) == {"labels", "depth"}
    fitted = probes[probes["split"] == "probe"]
    assert len(fitted) == 5 * (1 + 1 + 2) * 3  # archs x (parity, s3, dyck x 2 targets) x layers
    assert fitted["probe_accuracy"].between(0, 1).all() and fitted["probe_accuracy"].std() > 0
    assert (fitted["n_test"] > 0).all()

    params = pd.read_csv(tables / "params.csv")
    assert len(params) == 15 and (params["params"] > 1000).all()

    training = pd.read_csv(tables / "training.csv")
    assert list(training.columns[:7]) == [
        "arch",
        "task",
        "seed",
        "steps",
        "reached",
        "validation_token_accuracy",
        "train_seconds",
    ]
    assert len(training) == 15 and training["train_seconds"].gt(0).all()
    curves = pd.read_csv(tables / "learning_curves.csv")
    last_check = curves.groupby(["arch", "task", "seed"])["step"].max()
    assert last_check.to_dict() == training.set_index(["arch", "task", "seed"])["steps"].to_dict()

    shapes = pd.read_csv(tables / "profile_shapes.csv")
    positions = ("crossing_95", "first_layer_95", "late_concentration")
    shape_metrics = {*positions, "best_block_accuracy", "last_block_accuracy"}
    gains = ("selectivity", "gain_over_untrained", "gain_over_token")
    shape_metrics |= {f"{gain}_{shape}" for gain in gains for shape in positions}
    assert set(shapes["metric"]) == shape_metrics
    assert shapes.groupby(["arch", "task", "target"]).size().eq(14).all() and len(shapes) == 20 * 14
    probes = pd.read_csv(tables / "probes.csv")
    assert (probes["selectivity"] == probes["probe_accuracy"] - probes["control_accuracy"]).all()
    assert (probes["gain_over_token"] == probes["probe_accuracy"] - probes["token_baseline"]).all()
    # Each untrained twin is its own probed run, read at the training length (8 here) only:
    # at its initial weights it reads differently.
    twinned = probes[probes["eval_length"] == 8]
    assert probes.loc[probes["eval_length"] != 8, "untrained_accuracy"].isna().all()
    assert (twinned["gain_over_untrained"] == twinned["probe_accuracy"] - twinned["untrained_accuracy"]).all()
    assert (
        twinned["untrained_accuracy"].between(0, 1).all() and twinned["gain_over_untrained"].abs().max() > 0
    )
    twins = list((workdir / "results" / "probes" / "untrained").rglob("*.csv"))
    assert len(twins) == 15
    assert figures.profile_rows(probes) == ["probe_accuracy", "gain_over_untrained"]
    summary = pd.read_csv(tables / "behaviour_summary.csv")
    assert ((summary["ci_low"].isna()) | (summary["ci_low"] <= summary["mean"])).all()

    depths = pd.read_csv(tables / "dyck_depths.csv")
    assert depths.groupby("eval_length")["fraction"].sum().round(9).eq(1).all()


def test_erasure_tables_cover_every_layer_method_and_length(workdir):
    tables = workdir / "results" / "tables"
    erasures = pd.read_csv(tables / "erasures.csv")
    assert set(erasures["method"]) == {"probe", "pca", "inlp", "leace", "random"}
    assert set(erasures["eval_length"]) == {8, 12}
    assert set(erasures["layer"]) == {0, 1, 2}
    assert erasures.groupby(["arch", "task"]).size().min() > 0
    assert (erasures["drop"] == erasures["accuracy_before"] - erasures["accuracy_after"]).all()
    assert erasures["drop"].abs().max() > 0  # some erasure changes behaviour
    readability = pd.read_csv(tables / "readability_vs_causality.csv")
    assert len(readability) == 15 * 3  # runs x (probe, inlp, leace)
    assert readability["best_probe_layer"].between(0, 2).all()


def test_claims_check_gives_a_verdict_per_finding(workdir):
    claims = pd.read_csv(workdir / "results" / "claims.csv")
    assert claims["finding"].tolist() == [1, 2, 3, 4, 5, 6, 7]
    assert set(claims["verdict"]) <= {"reproduced", "not reproduced", "inconclusive"}
    # One seed has no interval: the seed-level findings cannot be decided at the test scale.
    assert set(claims.loc[claims["finding"] <= 4, "verdict"]) == {"inconclusive"}
    assert claims["scale"].str.contains("1 seed;").all()
    # Tiny models do not learn their tasks in 6 steps: the profile findings say so.
    assert "untested: mamba did not learn parity (accuracy" in claims.set_index("finding").loc[2, "reason"]
    assert "Runs that learned their task" in (workdir / "results" / "claims.md").read_text()
    assert "| 5 |" in (workdir / "results" / "claims.md").read_text()
    subclaims = pd.read_csv(workdir / "results" / "subclaims.csv")
    assert {"reading", "margin", "n", "seeds", "interval", "ci_low", "ci_high", "status"} <= set(subclaims)
    assert set(subclaims["reading"]) == {"gated", "on_gains", "ungated"}
    assert not subclaims["status"].isin(["supported", "contradicted"]).any()  # one seed decides nothing


def test_html_report_builds_with_figures_tables_and_claims(workdir):
    snakemake(workdir, "--configfile", "config/test.yaml", "--report", "results/report.html")
    html = (workdir / "results" / "report.html").read_text(errors="ignore")
    for name in ("probe_profiles.png", "learning_curves.png", "erasures.png", "claims.csv", "training.csv"):
        assert name in html


def test_figures_are_real_images(workdir):
    for name in ("probe_profiles", "behaviour", "learning_curves", "erasures", "erasure_ood"):
        png = matplotlib.image.imread(workdir / "results" / "figures" / f"{name}.png")
        assert png.shape[0] > 300 and png.shape[1] > 600
        assert png[..., :3].std() > 0.05  # not blank
        assert (workdir / "results" / "figures" / f"{name}.pdf").read_bytes().startswith(b"%PDF")


def test_every_job_leaves_a_log_and_a_benchmark(workdir):
    logs = list((workdir / "results" / "logs" / "train").rglob("*.log"))
    assert len(logs) == 15
    assert all("step" in log.read_text() for log in logs)
    assert len(list((workdir / "results" / "benchmarks").rglob("*.tsv"))) > 60


def test_nothing_is_pending_after_a_complete_run(workdir):
    assert planned_jobs(workdir) == []


def test_training_jobs_start_longest_first(workdir):
    """Jobs of one task become ready together (they share its data); train_priority
    must then start them by the families' training time, longest first."""
    first_run = sorted((workdir / ".snakemake" / "log").glob("*.snakemake.log"))[0]
    started = [w for rule, w in listed_jobs(first_run.read_text()) if rule == "train"]
    longest_first = ["mamba2", "mamba", "transformer", "gru", "lstm"]
    for task in ("parity", "s3", "dyck"):
        assert [w["arch"] for w in started if w["task"] == task] == longest_first


def test_probe_setting_reruns_probes_and_their_consumers_only(workdir):
    jobs = planned_jobs(workdir, overlay(workdir, "probe_c.yaml", {"probes": {"C": 0.5}}))
    rules = [rule for rule, _ in jobs]
    assert rules.count("probes") == rules.count("probes_untrained") == 15
    # Erasures fit their own probes with the same settings, so they rerun too.
    assert rules.count("erasures") == 15
    assert not {"train", "evaluate"} & set(rules)
    assert set(rules) == {
        "probes",
        "probes_untrained",
        "probes_table",
        "erasures",
        "aggregate_table",
        "readability_table",
        "probe_profiles_figure",
        "erasure_figures",
        "summary_tables",
        "claims",
        "all",
    }


def test_one_architectures_training_setting_reruns_only_its_chain(workdir):
    change = {"training": {"overrides": {"gru": {"lr": 0.01}}}}  # no gru/task key sets an lr
    jobs = planned_jobs(workdir, overlay(workdir, "gru_lr.yaml", change))
    per_run = [(rule, w) for rule, w in jobs if rule in PER_RUN_RULES]
    assert {w["arch"] for _, w in per_run} == {"gru"}
    assert Counter(rule for rule, _ in per_run) == {rule: 3 for rule in PER_RUN_RULES}  # 3 tasks
    assert "task_data" not in {rule for rule, _ in jobs}
    # The untrained twins do not depend on training settings.
    assert not {"untrained", "probes_untrained"} & {rule for rule, _ in jobs}


def test_one_pairs_override_reruns_only_that_pairs_chain(workdir):
    change = {"training": {"overrides": {"lstm/s3": {"lr": 0.01, "max_steps": 8}}}}
    jobs = planned_jobs(workdir, overlay(workdir, "lstm_s3.yaml", change))
    per_run = [(rule, w) for rule, w in jobs if rule in PER_RUN_RULES]
    assert {(w["arch"], w["task"]) for _, w in per_run} == {("lstm", "s3")}
    assert Counter(rule for rule, _ in per_run) == {rule: 1 for rule in PER_RUN_RULES}
    assert not {"task_data", "untrained", "probes_untrained"} & {rule for rule, _ in jobs}


def test_one_pairs_start_token_rebuilds_only_that_pair_and_its_untrained_twin(workdir):
    change = {"model": {"options": {"gru/s3": {"start_token": True}}}}
    jobs = planned_jobs(workdir, overlay(workdir, "gru_s3_start.yaml", change))
    per_run = {rule: w for rule, w in jobs if rule in PER_RUN_RULES | {"untrained", "probes_untrained"}}
    assert set(per_run) == PER_RUN_RULES | {"untrained", "probes_untrained"}
    assert Counter((rule, w["arch"], w["task"]) for rule, w in jobs if "arch" in w) == {
        (rule, "gru", "s3"): 1 for rule in per_run
    }


def test_runs_stop_at_the_criterion_or_at_max_steps(workdir):
    """config/test.yaml gives the GRU a target it reaches at its second check (step 4);
    no other model reaches 0.99 in 6 steps."""
    training = pd.read_csv(workdir / "results" / "tables" / "training.csv")
    reached = training[training["arch"] == "gru"]
    assert reached["reached"].all() and (reached["steps"] == 4).all()
    assert (reached["validation_token_accuracy"] >= reached["target_accuracy"]).all()
    ran_out = training[training["arch"] != "gru"]
    assert not ran_out["reached"].any() and (ran_out["steps"] == ran_out["max_steps"]).all()
    meta = (workdir / "results" / "models" / "gru" / "s3" / "seed0" / "model.json").read_text()
    assert '"steps": 4' in meta and '"reached": true' in meta


def test_stopping_criterion_reruns_the_training_chain_of_the_runs_it_changes(workdir):
    """A new shared target reaches every architecture but the GRU, whose override keeps its own."""
    jobs = planned_jobs(workdir, overlay(workdir, "target.yaml", {"training": {"target_accuracy": 0.5}}))
    per_run = [(rule, w) for rule, w in jobs if rule in PER_RUN_RULES]
    assert {w["arch"] for _, w in per_run} == {"transformer", "mamba", "mamba2", "lstm"}
    assert Counter(rule for rule, _ in per_run) == {rule: 12 for rule in PER_RUN_RULES}
    assert not {"task_data", "sweep_train"} & {rule for rule, _ in jobs}


def test_sweep_target_trains_the_grid_and_reads_validation_accuracy_only(tmp_path):
    root = copy_workflow(tmp_path)
    grid = {
        "architectures": ["transformer"],
        "tasks": ["parity"],
        "sweep": {
            "lr": [0.003],
            "batch_size": [4, 8],
            "start_token": [False, True],
            "blocks": {
                "transformer": {  # the names of config.yaml's blocks: an overlay merges onto them
                    "parallel": {"rotary_pct": 0.25, "use_parallel_residual": True},
                    "sequential": {"rotary_pct": 1.0, "use_parallel_residual": False},
                }
            },
        },
    }
    result = snakemake(
        root, "sweep", "--configfile", "config/test.yaml", str(overlay(root, "grid.yaml", grid))
    )
    rules = {rule for rule, _ in listed_jobs(result.stdout + result.stderr)}
    # Validation data, the short runs and their summaries; no probe, erasure or claim.
    assert rules == {"task_data", "sweep_train", "sweep_table", "sweep_figure", "sweep"}
    assert not (root / "results" / "models").exists()
    sweep = pd.read_csv(root / "results" / "tables" / "sweep.csv")
    # Two blocks, each with and without a start token, at two batch sizes.
    assert len(sweep) == 2 * 2 * 2
    assert set(sweep["block"]) == {"parallel", "sequential"}
    assert set(sweep["start_token"]) == {False, True}
    # Equal sequences: batch 8 trains half the steps of batch 4 (test.yaml: 6 steps at the smallest).
    assert set(zip(sweep["batch_size"], sweep["max_steps"])) == {(4, 6), (8, 3)}
    assert sweep["selected"].sum() == sweep["chosen"].sum() == 1
    png = matplotlib.image.imread(root / "results" / "figures" / "sweep.png")
    assert png.shape[1] > 600 and png[..., :3].std() > 0.05


def test_learnability_trains_again_only_the_pairs_that_missed_the_criterion_to_ten_times_the_budget(tmp_path):
    """test.yaml: the GRU reaches its criterion at step 4 of 6, the LSTM does not; the
    LSTM's seed 0 is trained again to 60 steps, the GRU keeps its default run."""
    root = copy_workflow(tmp_path)
    study = overlay(root, "pairs.yaml", {"architectures": ["gru", "lstm"], "tasks": ["parity"]})
    result = snakemake(root, "learnability", "--configfile", "config/test.yaml", str(study))
    jobs = listed_jobs(result.stdout + result.stderr)
    assert {rule for rule, _ in jobs} == {
        "task_data",
        "train",
        "learnability_train",
        "learnability_table",
        "learnability_figure",
        "learnability",
    }
    table = pd.read_csv(root / "benchmarks" / "learnability.csv").set_index("arch")
    assert list(table.reset_index().columns) == [
        "arch",
        "task",
        "cap",
        "steps_to_95",
        "steps_to_99",
        "best_val_accuracy",
        "wall_s",
        "default_val_accuracy",
        "study_max_steps",
    ]
    assert table.loc["gru", "cap"] == 6 and table.loc["lstm", "cap"] == 60
    assert (table["study_max_steps"] >= 6).all()  # never below test.yaml's default budget
    assert (table["wall_s"] > 0).all() and table["best_val_accuracy"].between(0, 1).all()
    curves = pd.read_csv(root / "benchmarks" / "learnability_curves.csv")
    lstm = curves[curves["arch"] == "lstm"]
    assert lstm["step"].max() > 6 and list(lstm["step"])[:3] == [
        2,
        4,
        6,
    ]  # a new run, past the default budget
    assert curves.loc[curves["arch"] == "gru", "step"].max() == 4  # the default run's checks
    default = (root / "results" / "models" / "lstm" / "parity" / "seed0" / "model.json").read_text()
    assert '"steps": 6' in default  # the study's run is left as it was
    assert (root / "benchmarks" / "learnability.png").stat().st_size > 10_000


def test_mamba_scan_setting_retrains_the_mamba_families_only(workdir):
    jobs = planned_jobs(workdir, overlay(workdir, "scan.yaml", {"training": {"mamba_scan": "reference"}}))
    assert {w["arch"] for rule, w in jobs if rule == "train"} == {"mamba", "mamba2"}


def test_lint_is_clean():
    result = subprocess.run([*SNAKEMAKE, "--lint"], cwd=REPO, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Congratulations" in result.stdout + result.stderr


def test_snakemake_files_are_snakefmt_formatted():
    snakefmt = shutil.which("snakefmt", path=str(Path(sys.executable).parent))
    assert snakefmt, "snakefmt is a test dependency"
    result = subprocess.run(
        [snakefmt, "--check", "Snakefile", "workflow/rules"], cwd=REPO, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize(
    "path,value,message",
    [
        (["tasks"], ["parity", "copying"], "tasks"),  # the schema
        (["probes"], KeyError, "'probes' is a required property"),  # the schema
        (["eval_lengths"], [60, 80], "eval_lengths must include train_length"),  # settings.check_config
    ],
)
def test_bad_config_stops_before_any_job(tmp_path, path, value, message):
    """Snakemake runs both checks (every case of tests/study_config.py's BAD_CONFIGS) before any job."""
    root = copy_workflow(tmp_path)
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    (root / "config" / "config.yaml").write_text(yaml.safe_dump(with_bad_value(config, path, value)))
    result = snakemake(root, check=False)
    assert result.returncode != 0
    assert message in result.stdout + result.stderr
    assert not (root / "results").exists()


def test_malformed_yaml_stops_with_a_message_and_keeps_results(tmp_path):
    root = copy_workflow(tmp_path)
    (root / "results" / "tables").mkdir(parents=True)
    kept = root / "results" / "tables" / "behaviour.csv"
    kept.write_text("finished work\n")
    (root / "config" / "config.yaml").write_text("seeds: [0, 1\n")
    result = snakemake(root, check=False)
    assert result.returncode != 0
    assert "not valid JSON or YAML" in result.stdout + result.stderr
    assert kept.read_text() == "finished work\n"


@pytest.mark.parametrize("key", ["device", "mamba_backend"])
def test_cuda_requested_without_a_gpu_stops_before_any_job(tmp_path, key):
    if shutil.which("nvidia-smi"):
        pytest.skip("this machine has a GPU")
    root = copy_workflow(tmp_path)
    cuda = overlay(root, "cuda.yaml", {"training": {key: "cuda"}})
    result = snakemake(root, "--configfile", "config/test.yaml", str(cuda), check=False)
    assert result.returncode != 0
    assert f"training.{key} is 'cuda'" in result.stdout + result.stderr
    assert "has no NVIDIA GPU" in result.stdout + result.stderr
    assert not (root / "results").exists()


def small_study(root: Path, name: str, **changes) -> Path:
    """An overlay on config/test.yaml: one task, GRU and Mamba only, plus ``changes``."""
    return overlay(root, name, {"architectures": ["gru", "mamba"], "tasks": ["dyck"], **changes})


def test_same_config_and_seed_give_identical_tables(workdir, tmp_path):
    """A second run (other directory, subset of the study) reproduces the first run's rows exactly."""
    root = copy_workflow(tmp_path)
    snakemake(root, "--configfile", "config/test.yaml", str(small_study(root, "small.yaml")))
    for table in ("behaviour", "probes", "erasures"):
        first = pd.read_csv(workdir / "results" / "tables" / f"{table}.csv")
        second = pd.read_csv(root / "results" / "tables" / f"{table}.csv")
        first = first[first["arch"].isin(["gru", "mamba"]) & (first["task"] == "dyck")]
        order = [
            c
            for c in ("arch", "seed", "layer", "target", "split", "method", "k", "draw", "eval_length")
            if c in first
        ]
        pd.testing.assert_frame_equal(
            first.sort_values(order).reset_index(drop=True), second.sort_values(order).reset_index(drop=True)
        )


def test_protected_checkpoints_are_write_protected(tmp_path):
    """Snakemake's protected(): read-only model files; a rerun needs an explicit deletion.

    The write bits of every model file are checked always. Snakemake refuses to rerun a
    job when an existing output fails ``os.access(path, os.W_OK)`` (``_IOFile.protected``,
    raised as ``ProtectedOutputException``), and the kernel grants root W_OK whatever the
    mode bits say: as root Snakemake finds nothing protected and does not refuse, so the
    refusal itself is checked only when the suite runs as another user.
    """
    root = copy_workflow(tmp_path)
    protect = small_study(root, "protect.yaml", architectures=["gru"], training={"protect_checkpoints": True})
    snakemake(root, "--configfile", "config/test.yaml", str(protect), "--until", "train")
    models = root / "results" / "models"
    # Every trained run's files (the train rule's protected outputs; untrained twins lie deeper).
    checkpoints = sorted([*models.glob("*/*/seed*/model.pt"), *models.glob("*/*/seed*/model.json")])
    trained = models / "gru" / "dyck" / "seed0"
    assert {trained / "model.pt", trained / "model.json"} <= set(checkpoints)
    for path in checkpoints:
        assert not path.stat().st_mode & 0o222, path  # read-only for everyone
    if os.geteuid() != 0:
        saved = {path: path.read_bytes() for path in checkpoints}
        retrain = overlay(root, "lr.yaml", {"training": {"lr": 0.01}})
        result = snakemake(root, "--configfile", "config/test.yaml", str(protect), str(retrain), check=False)
        assert result.returncode != 0 and "Write-protected output files" in result.stdout + result.stderr
        assert {path: path.read_bytes() for path in checkpoints} == saved


def test_codedepth_runs_the_whole_chain_on_the_offline_default_corpus(tmp_path):
    """No network and no corpus configuration: the standard library is the corpus."""
    root = copy_workflow(tmp_path)
    code = overlay(root, "code.yaml", {"architectures": ["gru", "transformer"], "tasks": ["codedepth"]})
    snakemake(root, "--configfile", "config/test.yaml", str(code))
    results = root / "results"
    corpus = pd.read_parquet(results / "data" / "codedepth" / "corpus.parquet")
    assert list(corpus.columns) == ["path", "source", "origin"] and len(corpus) == 80
    statistics = pd.read_csv(results / "tables" / "codedepth_corpus.csv")
    assert set(statistics["split"]) == {"train", "validation", "probe", "test"}
    assert statistics["files"].sum() == 80 and statistics["tokens"].min() > 0
    validation = pd.read_parquet(results / "data" / "codedepth" / "validation_L8.parquet")
    assert {"path", "start"} <= set(validation.columns)
    assert not set(validation["path"]) & set(
        pd.read_parquet(results / "data" / "codedepth" / "test_L12.parquet")["path"]
    )
    assert not list((results / "data" / "codedepth").glob("train_*"))  # training draws from the corpus
    assert (
        "codedepth training windows"
        in (results / "logs" / "train" / "gru" / "codedepth" / "seed0.log").read_text()
    )
    depths = pd.read_csv(results / "tables" / "codedepth_depths.csv")
    assert depths.query("depth > 0")["fraction"].sum() > 0.1  # real nesting, not all depth 0
    for table in ("behaviour", "probes", "erasures"):
        frame = pd.read_csv(results / "tables" / f"{table}.csv")
        assert set(frame["task"]) == {"codedepth"} and set(frame["arch"]) == {"gru", "transformer"}
    assert (results / "figures" / "probe_profiles.png").stat().st_size > 10_000
    assert (results / "claims.md").exists()


def test_a_corpus_without_tokenizable_python_stops_at_the_corpus_job(tmp_path):
    """CodeSearchNet-schema rows that are not Python: the first job fails and says why."""
    root = copy_workflow(tmp_path)
    rows = tmp_path / "not_python.jsonl"
    rows.write_text(
        '{"repository_name": "a/b", "func_path_in_repository": "m.py", "func_name": "f", '
        '"whole_func_string": "func Main() { $ }", "language": "python"}\n'
    )
    corpus = {"source": "codesearchnet", "dataset": "json", "data_files": str(rows), "max_files": None}
    bad = overlay(root, "bad_corpus.yaml", {"tasks": ["codedepth"], "corpus": corpus})
    result = snakemake(root, "--configfile", "config/test.yaml", str(bad), check=False)
    assert result.returncode != 0
    assert "no tokenizable Python file" in (root / "results/logs/data/codedepth/corpus.log").read_text()
    assert not list((root / "results" / "models").glob("*/codedepth/seed*/model.pt"))  # no training
    # (untrained twins, results/models/untrained/, need no corpus)


def test_conv1d_attribution_runs_when_the_no_conv_variant_is_added_to_a_finished_study(workdir, tmp_path):
    """The no-conv variant joins a copy of the complete run: it and the tables run, Mamba's runs are reused."""
    root = tmp_path / "study"
    shutil.copytree(workdir, root, symlinks=True)
    variant = overlay(root, "variant.yaml", {"architectures": ["mamba", "mamba_noconv"]})
    result = snakemake(root, "--configfile", "config/test.yaml", str(variant))
    ran = listed_jobs(result.stdout + result.stderr)
    trained = {(rule, w["arch"]) for rule, w in ran if rule in PER_RUN_RULES | {"untrained"}}
    assert {arch for _, arch in trained} == {"mamba_noconv"} and ("train", "mamba_noconv") in trained
    tables = root / "results" / "tables"
    table = pd.read_csv(tables / "conv1d.csv")
    assert set(table["variant"]) == {"conv", "noconv_trained", "noconv_inference"}
    assert set(table["task"]) == {"parity", "s3", "dyck"}
    summary = pd.read_csv(tables / "conv1d_summary.csv")
    assert len(summary) == 6 and summary["difference_pp"].abs().sum() > 0  # 3 tasks x 2 ablations
    assert (root / "results" / "figures" / "conv1d.png").stat().st_size > 10_000
    claims = pd.read_csv(root / "results" / "claims.csv").set_index("finding")
    assert "did not run" not in claims.loc[7, "reason"]


def test_an_architecture_added_to_the_registry_alone_runs_through_the_workflow(tmp_path):
    """docs/extending.md's first recipe: a stack of torch RNN layers is one registry row
    (and its name in the schema's enum); no rule file changes, and it trains, is evaluated,
    and is probed beside its untrained twin."""
    root = copy_workflow(tmp_path)
    shutil.copytree(REPO / "src", root / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    registry = root / "src" / "statelayers" / "models" / "registry.py"
    row = '    Arch("gru", "gru", "GRU", "#9467bd", "v", rnn_cell="GRU"),\n'
    registry.write_text(
        registry.read_text().replace(
            row, row + '    Arch("rnn", "rnn", "RNN", "#8c564b", "*", rnn_cell="RNN"),\n'
        )
    )
    schema = root / "workflow" / "schemas" / "config.schema.yaml"
    schema.write_text(schema.read_text().replace("enum: [transformer,", "enum: [rnn, transformer,", 1))
    study = overlay(root, "rnn.yaml", {"architectures": ["rnn"], "tasks": ["parity"]})
    targets = ["results/probes/rnn/parity/seed0.csv", "results/probes/untrained/rnn/parity/seed0.csv"]
    env = {"PYTHONPATH": str(root / "src")}
    snakemake(root, *targets, "--configfile", "config/test.yaml", str(study), env=env)
    meta = (root / "results" / "models" / "rnn" / "parity" / "seed0" / "model.json").read_text()
    assert '"arch": "rnn"' in meta
    weights = torch.load(
        root / "results" / "models" / "rnn" / "parity" / "seed0" / "model.pt", weights_only=True
    )
    assert any(name.endswith("rnn.weight_hh_l0") for name in weights)  # built as torch.nn.RNN layers
    probes = pd.read_csv(root / targets[0])
    assert set(probes["layer"]) == {0, 1, 2} and probes["probe_accuracy"].between(0, 1).all()
