"""Atomic writes and checked reads for the files that connect workflow steps.

Every writer goes to a temporary file in the destination directory, then
``os.replace``: a crash never leaves a truncated file under the final name.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq


@contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary sibling of ``path``; rename it onto ``path`` if the block succeeds."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        yield Path(tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def write_parquet(table: pa.Table | pd.DataFrame, path: str | os.PathLike) -> None:
    if isinstance(table, pd.DataFrame):
        table = pa.Table.from_pandas(table, preserve_index=False)
    with atomic_path(path) as tmp:
        pq.write_table(table, tmp, compression="zstd")


def write_csv(frame: pd.DataFrame, path: str | os.PathLike) -> None:
    with atomic_path(path) as tmp:
        frame.to_csv(tmp, index=False)


def keyed_frame(rows: list[dict], key: dict) -> pd.DataFrame:
    """Rows as a frame with the ``key`` columns (e.g. arch, task, seed) first."""
    return pd.DataFrame([{**key, **row} for row in rows])


def write_json(obj: Any, path: str | os.PathLike) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps(obj, indent=2, sort_keys=True) + "\n")


def write_with(writer: Callable[[Path], None], path: str | os.PathLike) -> None:
    """Atomic write through a function that takes a path (``torch.save``, ``savefig``...)."""
    with atomic_path(path) as tmp:
        writer(tmp)


class CorruptInputError(RuntimeError):
    """An input file exists but cannot be read; the message says how to regenerate it."""


def _unreadable(path: str | os.PathLike, err: Exception) -> CorruptInputError:
    return CorruptInputError(
        f"cannot read {path}: {err}. The file is truncated or corrupted; delete it and "
        f"rerun snakemake (or `snakemake --forcerun {path}`) to regenerate it."
    )


def read_table(path: str | os.PathLike, columns: list[str] | None = None) -> pa.Table:
    try:
        return pq.read_table(path, columns=columns)
    except (pa.ArrowInvalid, OSError) as err:
        raise _unreadable(path, err) from err


def read_parquet(path: str | os.PathLike, columns: list[str] | None = None) -> pd.DataFrame:
    return read_table(path, columns).to_pandas()


def read_json(path: str | os.PathLike) -> Any:
    try:
        return json.loads(Path(path).read_text())
    except (json.JSONDecodeError, OSError) as err:
        raise _unreadable(path, err) from err
