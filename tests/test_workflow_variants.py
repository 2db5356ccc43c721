"""The workflow's other end-to-end runs on config/test.yaml, each in its own directory: the
sweep and learnability targets, Code-Depth, an architecture added to the registry, protected
checkpoints, and the configs and corpora that stop before or at the first job."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import matplotlib.image
import pandas as pd
import pytest
import torch
import yaml
from study_config import with_bad_value
from workflow_run import REPO, SNAKEMAKE, copy_workflow, listed_jobs, overlay, small_study, snakemake

pytestmark = pytest.mark.workflow


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


def test_the_console_shows_progress_and_a_line_per_training_run_and_no_progress_bar(tmp_path):
    """Validation on more sequences than one forward batch draws a progress bar: it goes to
    the job's log, and the console keeps Snakemake's progress and the run's one line."""
    root = copy_workflow(tmp_path)
    config = small_study(root, "bars.yaml", architectures=["gru"], data={"validation": 40})
    target = "results/models/gru/dyck/seed0/model.pt"
    result = snakemake(root, target, "--configfile", "config/test.yaml", str(config))
    console = result.stdout + result.stderr
    assert not [line for line in console.splitlines() if re.search(r"\d+%\||it/s\]|s/it\]", line)]
    assert " INFO " not in console  # a job's log lines stay in its log
    trained = r"^trained gru on dyck, seed 0: \d+ of 6 steps, validation token accuracy"
    assert re.search(trained, console, re.M) and "steps (100%) done" in console
    log = root / "results" / "logs" / "train" / "gru" / "dyck" / "seed0.log"
    assert "forward: 100%|" in log.read_text()


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
