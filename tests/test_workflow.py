"""The Snakemake workflow end to end on config/test.yaml (one finished run that every test
here shares), and what a config change reruns."""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

import matplotlib.image
import pandas as pd
import pytest
from workflow_run import copy_workflow, listed_jobs, overlay, planned_jobs, small_study, snakemake

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
    refit = erasures["method"].isin(["probe", "inlp", "leace"])  # erasures.refit_methods
    assert erasures.loc[refit, "refit_probe_accuracy"].between(0, 1).all()
    assert erasures.loc[~refit, "refit_probe_accuracy"].isna().all()
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
    assert {"room", "plain"} <= set(subclaims)
    robustness = pd.read_csv(workdir / "results" / "robustness.csv")
    alternatives = set(robustness["alternative"])
    assert set(subclaims["reading"]) == {"decided", *alternatives} and len(alternatives) >= 6
    assert set(robustness["finding"]) == {1, 2, 3, 4, 5}
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


def test_mamba_scan_setting_retrains_the_mamba_families_only(workdir):
    jobs = planned_jobs(workdir, overlay(workdir, "scan.yaml", {"training": {"mamba_scan": "reference"}}))
    assert {w["arch"] for rule, w in jobs if rule == "train"} == {"mamba", "mamba2"}


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


def test_conv1d_attribution_runs_when_the_no_conv_variant_is_added_to_a_finished_study(workdir, tmp_path):
    """The no-conv variant joins a copy of the complete run (on one of its tasks): it and the
    tables run, Mamba's runs are reused."""
    root = tmp_path / "study"
    shutil.copytree(workdir, root, symlinks=True)
    variant = overlay(root, "variant.yaml", {"architectures": ["mamba", "mamba_noconv"], "tasks": ["dyck"]})
    result = snakemake(root, "--configfile", "config/test.yaml", str(variant))
    ran = listed_jobs(result.stdout + result.stderr)
    trained = {(rule, w["arch"]) for rule, w in ran if rule in PER_RUN_RULES | {"untrained"}}
    assert {arch for _, arch in trained} == {"mamba_noconv"} and ("train", "mamba_noconv") in trained
    tables = root / "results" / "tables"
    table = pd.read_csv(tables / "conv1d.csv")
    assert set(table["variant"]) == {"conv", "noconv_trained", "noconv_inference"}
    assert set(table["task"]) == {"dyck"}
    summary = pd.read_csv(tables / "conv1d_summary.csv")
    assert len(summary) == 2 and summary["difference_pp"].abs().sum() > 0  # 1 task x 2 ablations
    assert (root / "results" / "figures" / "conv1d.png").stat().st_size > 10_000
    claims = pd.read_csv(root / "results" / "claims.csv").set_index("finding")
    assert "did not run" not in claims.loc[7, "reason"]
