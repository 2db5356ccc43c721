"""Training on fresh sequences until a validation criterion, and the tables it leaves."""

import json
import subprocess
import sys
from dataclasses import MISSING, fields
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from study_config import CONFIG, cpu_run, train_config, training_settings

from statelayers import files, training
from statelayers.models.tagger import build_model, matched_spec
from statelayers.settings import pretrained_training
from statelayers.stopping import reached_target
from statelayers.tasks.codedepth import file_split
from statelayers.tasks.data import TrainingStream, make_split, split_rng, training_rng
from statelayers.report.training_tables import TRAINING_COLUMNS, learning_curves, training_table
from statelayers.training import (
    RunInputs,
    TrainConfig,
    accumulate_gradients,
    make_optimizer,
    parameter_groups,
    train_checkpoint,
    training_step,
    untrained_checkpoint,
)

SPEC = {
    "arch": "gru",
    "task": "s3",
    "task_params": {},
    "d_model": 8,
    "n_layers": 1,
    "options": {},
    "target_params": 1,
}
TRAINING = training_settings(
    max_steps=12,
    batch_size=4,
    lr=0.01,
    weight_decay=0.0,
    warmup_fraction=0.1,
    decay_fraction=0.5,
    eval_every=3,
    log_every=2,
)


@pytest.fixture
def validation(tmp_path):
    path = tmp_path / "validation.parquet"
    files.write_parquet(make_split("s3", "validation", 16, 10, seed=0), path)
    return path


def run(validation, out, spec=SPEC, seed=0, **settings):
    inputs = cpu_run(spec, TRAINING | settings, validation, seed=seed)
    train_checkpoint(inputs, out_dir=out, history_path=out / "train_log.csv")
    return json.loads((out / "model.json").read_text()), pd.read_csv(out / "train_log.csv")


def test_every_training_setting_comes_from_the_config_and_none_from_a_default_of_train_config():
    names = {field.name for field in fields(TrainConfig)}
    assert all(field.default is MISSING and field.default_factory is MISSING for field in fields(TrainConfig))
    assert names <= set(CONFIG["training"]) and names == set(pretrained_training(CONFIG))


def test_a_jobs_run_is_its_run_param_with_its_input_files():
    params = {
        "spec": SPEC,
        "training": TRAINING,
        "seed": 3,
        "data_seed": 0,
        "train_length": 10,
        "device": "cpu",
        "mamba": None,
    }
    run = RunInputs.of_job(params, {"validation": "v.parquet"})
    assert run == RunInputs(**params, validation_path="v.parquet", corpus_path=None)
    assert run.config == TrainConfig(**TRAINING)
    assert (
        RunInputs.of_job(params, {"validation": "v.parquet", "corpus": "c.parquet"}).corpus_path
        == "c.parquet"
    )


def test_the_criterion_needs_two_consecutive_checks_at_the_target():
    assert reached_target([0.5, 0.99, 0.995], 0.99)
    assert not reached_target([0.99, 0.5, 0.99], 0.99)
    assert not reached_target([1.0], 0.99)  # one lucky check does not stop a run
    assert reached_target([0.3, 0.3], 0.3)  # reaching means >=


def test_a_run_stops_at_the_second_check_that_reaches_the_target(tmp_path, validation):
    meta, history = run(validation, tmp_path / "easy", target_accuracy=0.01)
    assert (meta["steps"], meta["reached"]) == (6, True)  # checks at steps 3 and 6
    assert history["step"].tolist() == [2, 3, 4, 6]
    assert history["validation_token_accuracy"].notna().tolist() == [False, True, False, True]
    assert meta["validation_token_accuracy"] == history["validation_token_accuracy"].iloc[-1]


def test_a_run_that_never_reaches_the_target_runs_to_max_steps(tmp_path, validation):
    meta, history = run(validation, tmp_path / "hard", target_accuracy=1.0)
    assert (meta["steps"], meta["reached"]) == (12, False)
    assert history["validation_token_accuracy"].notna().sum() == 4  # steps 3, 6, 9, 12
    assert history["validation_token_accuracy"].iloc[-1] < 1.0


def test_stopping_early_truncates_the_full_run_and_keeps_its_schedule(tmp_path, validation):
    """The schedule is defined on max_steps: a stopped run is the start of the full one."""
    _, stopped = run(validation, tmp_path / "stopped", target_accuracy=0.01)
    _, full = run(validation, tmp_path / "full", target_accuracy=1.0)
    pd.testing.assert_frame_equal(
        stopped.drop(columns="seconds"), full.drop(columns="seconds").iloc[: len(stopped)]
    )
    assert full["lr"].iloc[-1] < full["lr"].max()  # the full run reached its decay


def test_every_step_draws_fresh_sequences_from_one_seeded_stream_per_run():
    def stream(run_seed):
        dyck = {"k": 2, "max_depth": 4, "open_prob": 0.5}
        return TrainingStream("dyck", 12, training_rng(5, "dyck", 12, run_seed), dyck)

    first = stream(0)
    a, b = first.draw(8), first.draw(8)
    assert not np.array_equal(a["tokens"], b["tokens"])  # new sequences every draw
    assert set(a) == {"tokens", "labels", "depth"} and a["tokens"].shape == (8, 12)
    np.testing.assert_array_equal(stream(0).draw(8)["tokens"], a["tokens"])  # reproducible
    assert not np.array_equal(stream(1).draw(8)["tokens"], a["tokens"])  # another run, another stream
    saved = first.state
    following = first.draw(8)
    resumed = stream(0)
    resumed.restore(saved)
    np.testing.assert_array_equal(resumed.draw(8)["tokens"], following["tokens"])


def test_the_training_stream_is_none_of_the_data_files_streams():
    """Seed 0's stream is a spawned child, not the stream a ``train`` file had (a trailing
    zero in the seed words would have made them equal)."""
    draws = {split: split_rng(5, "parity", split, 40).integers(0, 2**62) for split in ("train", "validation")}
    for run_seed in (0, 1):
        assert training_rng(5, "parity", 40, run_seed).integers(0, 2**62) not in draws.values()


def test_codedepth_trains_on_windows_of_its_training_files_only():
    corpus = pd.DataFrame(
        {"path": [f"pkg/module_{i}.py" for i in range(40)], "source": ["x = (1,\n     [2])\ny = 3\n"] * 40}
    )
    stream = TrainingStream(
        "codedepth", 6, np.random.default_rng(0), {"max_depth": 4, "count_indent": False}, corpus=corpus
    )
    drawn = stream.draw(64)
    assert drawn["tokens"].shape == (64, 6) and drawn["labels"].max() >= 1
    assert {file_split(path) for path in drawn["path"]} == {"train"}
    assert {file_split(path) for path in corpus["path"]} > {"train"}


def test_training_tables_list_every_run_and_its_validation_checks(tmp_path, validation):
    metas, histories = [], []
    for name, target in (("easy", 0.01), ("hard", 1.0)):
        meta, history = run(validation, tmp_path / name, target_accuracy=target)
        metas.append(meta)
        histories.append(history)
    table = training_table(metas)
    assert list(table.columns) == list(TRAINING_COLUMNS)
    assert table[["steps", "reached", "max_steps", "train_length"]].values.tolist() == [
        [6, True, 12, 10],
        [12, False, 12, 10],
    ]
    curves = learning_curves(metas, histories)
    assert curves["step"].tolist() == [3, 6, 3, 6, 9, 12]
    assert set(curves.columns) >= {"arch", "task", "seed", "validation_token_accuracy"}


@pytest.mark.parametrize("arch", ["gru", "mamba"])
def test_an_untrained_twin_holds_the_weights_its_run_started_from(tmp_path, validation, monkeypatch, arch):
    started, loop = {}, training.train

    def record_then_train(model, *args, **kwargs):
        started.update({name: value.clone() for name, value in model.state_dict().items()})
        return loop(model, *args, **kwargs)

    monkeypatch.setattr(training, "train", record_then_train)
    spec = SPEC | {"arch": arch}
    run(validation, tmp_path / "trained", spec=spec, seed=5)
    untrained_checkpoint(spec, seed=5, out_dir=tmp_path / "untrained")
    twin = torch.load(tmp_path / "untrained" / "model.pt", weights_only=True)
    trained = torch.load(tmp_path / "trained" / "model.pt", weights_only=True)
    assert twin.keys() == started.keys()
    assert all(torch.equal(twin[name], started[name]) for name in twin)
    assert any(not torch.equal(twin[name], trained[name]) for name in twin)  # training moved them
    meta = json.loads((tmp_path / "untrained" / "model.json").read_text())
    assert meta["steps"] == 0 and meta["untrained"] and meta["seed"] == 5


def tiny_gru() -> torch.nn.Module:
    torch.manual_seed(0)
    return build_model(matched_spec(**SPEC)).train()


def test_a_training_step_reads_nothing_back_from_the_device(monkeypatch):
    """On a GPU any read (``item``, ``float``, ``bool``) would make the host wait for the step."""
    model, config = tiny_gru(), train_config(batch_size=4, grad_accumulation=2)
    tokens, labels = torch.randint(0, 6, (8, 10)), torch.randint(0, 6, (8, 10))
    for read in ("item", "__float__", "__bool__", "tolist"):
        monkeypatch.setattr(
            torch.Tensor, read, lambda *args, read=read: pytest.fail(f"the step called {read}")
        )
    loss, acc = accumulate_gradients(model, tokens, labels, config, torch.device("cpu"))
    monkeypatch.undo()
    assert loss.dtype == acc.dtype == torch.float64 and loss.dim() == acc.dim() == 0
    assert 0 <= acc.item() <= 1 < loss.item()


def test_adamw_is_fused_on_cuda_and_on_cpu_foreach_which_equals_the_per_tensor_loop_bit_for_bit():
    config = train_config(lr=0.05, weight_decay=0.1)
    assert make_optimizer(tiny_gru(), config, torch.device("cuda")).defaults["fused"]
    weights = []
    for optimizer in (
        lambda model: make_optimizer(model, config, torch.device("cpu")),
        lambda model: torch.optim.AdamW(parameter_groups(model, 0.1), lr=0.05, foreach=False),
    ):
        model, generator = tiny_gru(), torch.Generator().manual_seed(1)
        adamw = optimizer(model)
        for _ in range(5):
            tokens, labels = (torch.randint(0, 6, (4, 10), generator=generator) for _ in range(2))
            training_step(model, adamw, tokens, labels, config, torch.device("cpu"))
        weights.append(model.state_dict())
    assert make_optimizer(tiny_gru(), config, torch.device("cpu")).defaults["foreach"]
    assert all(torch.equal(weights[0][name], weights[1][name]) for name in weights[0])


def test_logged_loss_and_accuracy_are_the_running_means_that_python_floats_gave(
    tmp_path, validation, monkeypatch
):
    """The sums moved to the device in float64: each row's mean, bit for bit, as before."""
    steps, step = [], training.training_step

    def record(*args):
        steps.append(step(*args))
        return steps[-1]

    monkeypatch.setattr(training, "training_step", record)
    run(validation, tmp_path / "run", target_accuracy=1.0)
    history = pd.read_csv(tmp_path / "run" / "train_log.csv", float_precision="round_trip")
    previous = 0
    for row in history.itertuples():
        values = [(loss.item(), acc.item()) for loss, acc in steps[previous : row.step]]
        loss_sum = acc_sum = 0.0
        for loss, acc in values:
            loss_sum, acc_sum = loss_sum + loss, acc_sum + acc
        assert (row.loss, row.train_token_accuracy) == (loss_sum / len(values), acc_sum / len(values))
        previous = row.step


def test_the_untrained_twin_of_a_recurrent_family_imports_no_transformers(tmp_path):
    """The LSTM's and GRU's untrained-twin jobs skip transformers' import (about 1 s each)."""
    code = (
        "import sys\nimport test_train\n"
        "test_train.untrained_checkpoint(test_train.SPEC, 0, sys.argv[1])\n"
        "print('transformers' in sys.modules)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "twin")],
        capture_output=True,
        text=True,
        cwd=Path(__file__).parent,
    )
    assert result.stdout.strip().splitlines()[-1:] == ["False"], result.stderr
    assert (tmp_path / "twin" / "model.pt").exists()
