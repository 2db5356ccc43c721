"""A training job killed with SIGKILL resumes and ends exactly where an uninterrupted run ends:
same weights, same history, same stopping step, with fresh sequences drawn all along."""

import json
import os
import signal
import subprocess
import sys

import pandas as pd
import pytest
import torch
from study_config import cpu_run, training_settings

from statelayers import files, training
from statelayers.tasks.data import make_split
from statelayers.training import ResumeFile, train_checkpoint

SPEC = {
    "arch": "lstm",
    "task": "parity",
    "task_params": {},
    "d_model": 8,
    "n_layers": 2,
    "options": {},
    "target_params": 1,
}
TRAINING = training_settings(
    max_steps=400,
    target_accuracy=0.99,  # reached at about step 200 of 400: the resumed run must stop there too
    batch_size=8,
    lr=0.01,
    weight_decay=0.0,
    warmup_fraction=0.1,
    eval_every=100,
    log_every=50,
)


LENGTH = 12
KILL_AT = 150


@pytest.fixture
def data(tmp_path):
    paths = {"validation": tmp_path / "validation.parquet"}
    files.write_parquet(make_split("parity", "validation", 64, LENGTH, seed=0), paths["validation"])
    return paths


def run_training(data, out, resume_every):
    inputs = cpu_run(SPEC, TRAINING, data["validation"], seed=3, train_length=LENGTH)
    return train_checkpoint(
        inputs, out_dir=out, history_path=out / "train_log.csv", resume_every=resume_every
    )


def run_until_killed(data, out):
    """Train, saving the resume state as often as it can, and SIGKILL this process in the
    middle of step KILL_AT (between two validation checks, some steps after the last save)."""
    step, calls = training.accumulate_gradients, []

    def step_then_die(*args, **kwargs):
        calls.append(1)
        if len(calls) == KILL_AT:
            os.kill(os.getpid(), signal.SIGKILL)
        return step(*args, **kwargs)

    training.accumulate_gradients = step_then_die
    run_training(data, out, resume_every=0.0)


def test_killed_training_resumes_to_identical_weights(tmp_path, data):
    reference = run_training(data, tmp_path / "reference", resume_every=float("inf"))
    out = tmp_path / "killed"
    script = (
        "import sys, json, torch; torch.set_num_threads(1); sys.path[:0] = json.loads(sys.argv[1]);"
        "from pathlib import Path; import test_resume as t;"
        "t.run_until_killed({k: Path(v) for k, v in json.loads(sys.argv[2]).items()}, Path(sys.argv[3]))"
    )
    child = subprocess.run(
        [
            sys.executable,
            "-c",
            script,
            json.dumps([os.path.dirname(__file__)]),
            json.dumps({k: str(v) for k, v in data.items()}),
            str(out),
        ],
        check=False,
        timeout=120,
    )
    assert child.returncode == -signal.SIGKILL
    resume_path = out / "resume.pt"
    assert not (out / "model.pt").exists()
    saved = torch.load(resume_path, weights_only=True)
    assert saved["stream"]["bit_generator"] == "PCG64"  # the training stream resumes where it was
    reference_meta = json.loads((tmp_path / "reference" / "model.json").read_text())
    assert (
        reference_meta["reached"]
        and 0 < saved["step"] < KILL_AT < reference_meta["steps"] < TRAINING["max_steps"]
    )

    resumed = run_training(data, out, resume_every=0.0)
    for (name, a), b in zip(reference.state_dict().items(), resumed.state_dict().values()):
        assert torch.equal(a, b), name
    metrics = ["step", "lr", "loss", "train_token_accuracy", "validation_token_accuracy"]
    pd.testing.assert_frame_equal(
        pd.read_csv(tmp_path / "reference" / "train_log.csv")[metrics],
        pd.read_csv(out / "train_log.csv")[metrics],
    )
    resumed_meta = json.loads((out / "model.json").read_text())
    assert (resumed_meta["steps"], resumed_meta["reached"]) == (reference_meta["steps"], True)
    assert not resume_path.exists()


def test_resume_file_of_other_inputs_is_ignored(tmp_path):
    resume = ResumeFile(tmp_path / "resume.pt", "abc")
    resume.save({"step": 5})
    assert resume.load()["step"] == 5
    assert ResumeFile(tmp_path / "resume.pt", "other").load() is None
    (tmp_path / "resume.pt").write_bytes(b"garbage")
    assert resume.load() is None
