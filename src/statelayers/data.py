"""Task data as Parquet: one row per sequence.

Schema of ``results/data/{task}/{split}_L{length}.parquet``:

=========  ==========  ====================================================
column     type        meaning
=========  ==========  ====================================================
seq_id     int32       0..n-1 within the file
tokens     list<int8>  input tokens (vocabularies in :mod:`statelayers.tasks`)
labels     list<int8>  training label at every position
depth      list<int8>  stack depth after every token (dyck only)
path       string      source file of the window (codedepth only)
start      int64       index of the window's first token in that file (codedepth only)
=========  ==========  ====================================================
"""

from __future__ import annotations

import logging
import zlib
from collections.abc import Mapping

import numpy as np
import pandas as pd
import pyarrow as pa

from statelayers.tasks import generate

SPLITS = ("train", "validation", "probe", "test")
SEQUENCE_COLUMNS = ("tokens", "labels", "depth")
"""Per-token columns (``list<int8>``); any other column is per-sequence metadata."""
log = logging.getLogger(__name__)


def split_rng(seed: int, task: str, split: str, length: int) -> np.random.Generator:
    """Independent, reproducible stream per (seed, task, split, length).

    crc32 is stable across processes (``hash`` of a str is salted), so the same
    config always gives the same data, and no two files share a stream.
    """
    key = zlib.crc32(f"{task}/{split}/{length}".encode())
    return np.random.default_rng(np.random.SeedSequence([seed, key]))


def make_split(
    task: str,
    split: str,
    n: int,
    length: int,
    seed: int,
    task_params: Mapping | None = None,
    corpus: str | None = None,
) -> pa.Table:
    """``n`` sequences of one split; Code-Depth cuts them from the ``corpus`` Parquet file."""
    rng = split_rng(seed, task, split, length)
    if task == "codedepth":
        from statelayers import codedepth, io

        if corpus is None:
            raise ValueError("codedepth data needs the corpus file")
        arrays, stats = codedepth.windows(
            io.read_parquet(corpus), split, n, length, rng, **dict(task_params or {})
        )
        log.info("codedepth %s L%d: %s", split, length, stats)
    else:
        arrays = generate(task, n, length, rng, task_params)
    columns = {"seq_id": pa.array(np.arange(n, dtype=np.int32))}
    for name, values in arrays.items():
        if name in SEQUENCE_COLUMNS:
            columns[name] = pa.array(list(values.astype(np.int8)), type=pa.list_(pa.int8()))
        else:
            columns[name] = pa.array(values)
    return pa.table(columns)


def to_arrays(frame: pd.DataFrame) -> dict[str, np.ndarray]:
    """Stack the per-token columns of a data file into ``(n, length)`` int64 arrays."""
    return {
        name: np.stack(frame[name].to_numpy()).astype(np.int64) for name in SEQUENCE_COLUMNS if name in frame
    } | {"seq_id": frame["seq_id"].to_numpy()}
