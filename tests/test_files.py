"""Atomic writes and the errors for unreadable inputs."""

import pandas as pd
import pytest

from statelayers import files
from statelayers.models.spec import ModelSpec
from statelayers.models.tagger import build_model, load_model, save_model


def test_failed_write_leaves_nothing_behind(tmp_path):
    target = tmp_path / "table.csv"
    with pytest.raises(RuntimeError):
        with files.atomic_path(target) as tmp:
            tmp.write_text("half")
            raise RuntimeError("crash mid-write")
    assert list(tmp_path.iterdir()) == []


def test_successful_write_replaces_atomically(tmp_path):
    target = tmp_path / "t.parquet"
    files.write_parquet(pd.DataFrame({"a": [1, 2]}), target)
    files.write_parquet(pd.DataFrame({"a": [3]}), target)
    assert files.read_parquet(target)["a"].tolist() == [3]
    assert [p.name for p in tmp_path.iterdir()] == ["t.parquet"]


def test_truncated_parquet_names_the_file_and_the_fix(tmp_path):
    target = tmp_path / "train_L40.parquet"
    files.write_parquet(pd.DataFrame({"a": range(100)}), target)
    target.write_bytes(target.read_bytes()[:50])
    with pytest.raises(files.CorruptInputError, match="train_L40.parquet.*rerun snakemake"):
        files.read_parquet(target)


def test_truncated_checkpoint_names_the_file(tmp_path):
    save_model(build_model(ModelSpec("gru", 2, 2, d_model=4, n_layers=1)), tmp_path)
    weights = tmp_path / "model.pt"
    weights.write_bytes(weights.read_bytes()[:100])
    with pytest.raises(files.CorruptInputError, match="model.pt"):
        load_model(tmp_path)


def test_an_uncaught_error_reaches_the_job_log(tmp_path):
    import subprocess
    import sys

    log = tmp_path / "job.log"
    code = (
        f"from statelayers import runtime; runtime.start({str(log)!r}); raise ValueError('corpus is empty')"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode != 0
    assert "ValueError: corpus is empty" in log.read_text()
    assert "corpus is empty" in result.stderr
