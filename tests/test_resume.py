"""A training job killed with SIGKILL resumes and ends exactly where an uninterrupted run ends."""

import json
import os
import signal
import subprocess
import sys
import time

import pandas as pd
import pytest
import torch

from statelayers import io
from statelayers.data import make_split
from statelayers.train import ResumeFile, train_checkpoint

SPEC = {
    "arch": "lstm",
    "task": "parity",
    "task_params": {},
    "d_model": 8,
    "n_layers": 2,
    "options": {},
    "target_params": 1,
}
TRAINING = {
    "steps": 400,
    "batch_size": 8,
    "lr": 0.01,
    "weight_decay": 0.0,
    "warmup_fraction": 0.1,
    "grad_clip": 1.0,
    "eval_every": 100,
    "log_every": 50,
}


@pytest.fixture
def data(tmp_path):
    paths = {}
    for split in ("train", "validation"):
        paths[split] = tmp_path / f"{split}.parquet"
        io.write_parquet(make_split("parity", split, 64, 12, seed=0), paths[split])
    return paths


def run_training(data, out, resume_every):
    return train_checkpoint(
        SPEC,
        TRAINING,
        seed=3,
        device="cpu",
        mamba=None,
        train_path=str(data["train"]),
        validation_path=str(data["validation"]),
        out_dir=out,
        history_path=out / "train_log.csv",
        resume_every=resume_every,
    )


def test_killed_training_resumes_to_identical_weights(tmp_path, data):
    reference = run_training(data, tmp_path / "reference", resume_every=float("inf"))
    out = tmp_path / "killed"
    script = (
        "import sys, json, torch; torch.set_num_threads(1); sys.path[:0] = json.loads(sys.argv[1]);"
        "from pathlib import Path; import test_resume as t;"
        "t.run_training({k: Path(v) for k, v in json.loads(sys.argv[2]).items()}, Path(sys.argv[3]), 0.0)"
    )
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            script,
            json.dumps([os.path.dirname(__file__)]),
            json.dumps({k: str(v) for k, v in data.items()}),
            str(out),
        ],
    )
    resume_path = out / "resume.pt"
    deadline = time.time() + 60
    while not resume_path.exists() and time.time() < deadline and child.poll() is None:
        time.sleep(0.02)
    time.sleep(0.3)
    child.send_signal(signal.SIGKILL)
    assert child.wait() == -signal.SIGKILL, "training finished before it could be killed"
    assert not (out / "model.pt").exists()
    killed_at = torch.load(resume_path, weights_only=True)["step"]
    assert 0 < killed_at < TRAINING["steps"]

    resumed = run_training(data, out, resume_every=0.0)
    for (name, a), b in zip(reference.state_dict().items(), resumed.state_dict().values()):
        assert torch.equal(a, b), name
    metrics = ["step", "loss", "train_token_accuracy", "validation_token_accuracy"]
    pd.testing.assert_frame_equal(
        pd.read_csv(tmp_path / "reference" / "train_log.csv")[metrics],
        pd.read_csv(out / "train_log.csv")[metrics],
    )
    assert not resume_path.exists()


def test_resume_file_of_other_inputs_is_ignored(tmp_path):
    resume = ResumeFile(tmp_path / "resume.pt", "abc")
    resume.save({"step": 5})
    assert resume.load()["step"] == 5
    assert ResumeFile(tmp_path / "resume.pt", "other").load() is None
    (tmp_path / "resume.pt").write_bytes(b"garbage")
    assert resume.load() is None
