"""Task data: fixed Parquet files for evaluation, fresh sequences for training.

Validation, probe and test sets are Parquet files written once from ``data_seed``.
Training has no file: every step draws new sequences from a :class:`TrainingStream`,
one seeded stream per run (:func:`training_rng`), so a model never sees a training
batch twice. For the formal tasks a validation sequence can also be drawn in training
only by chance: at L = 40 there are 2^40 parity sequences, and more for S3 and Dyck,
so a validation set of hundreds of sequences is practically disjoint from any number of
training steps here (at the tests' L = 8 it is not, and needs not be). Code-Depth
keeps whole files to one split, so its training windows never come from a validation,
probe or test file.

Schema of ``results/data/{task}/{split}_L{length}.parquet``:

=========  ==========  ====================================================
column     type        meaning
=========  ==========  ====================================================
seq_id     int32       0..n-1 within the file
tokens     list<int8>  input tokens (vocabularies in :mod:`statelayers.tasks.formal`)
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

from statelayers.tasks.formal import generate

SPLITS = ("validation", "probe", "test")
"""The data files; the training split is drawn afresh by each run (:class:`TrainingStream`)."""
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


def training_rng(seed: int, task: str, length: int, run_seed: int) -> np.random.Generator:
    """The training stream of run ``run_seed``: child ``run_seed`` (numpy's ``spawn_key``)
    of the stream a ``train`` file would have had under :func:`split_rng`.

    Spawned children are independent of their parent and of each other, and no data
    file uses the ``train`` key, so training never replays a validation, probe or test
    stream, and two seeds of one task see different sequences. A plain third entropy
    word would not do: ``SeedSequence([a, b, 0])`` equals ``SeedSequence([a, b])``.
    """
    key = zlib.crc32(f"{task}/train/{length}".encode())
    return np.random.default_rng(np.random.SeedSequence([seed, key], spawn_key=(run_seed,)))


class TrainingStream:
    """Fresh training sequences of one task, drawn batch by batch from ``rng``.

    The formal tasks come from their generators (:mod:`statelayers.tasks.formal`); Code-Depth
    windows from the training files of the ``corpus`` frame (tokenized once, here).
    :attr:`state` and :meth:`restore` carry the stream through a resumed run.
    """

    def __init__(
        self,
        task: str,
        length: int,
        rng: np.random.Generator,
        task_params: Mapping | None = None,
        corpus: pd.DataFrame | None = None,
    ):
        self.task, self.length, self.rng = task, length, rng
        self.task_params = dict(task_params or {})
        self.windows = None
        if task == "codedepth":
            from statelayers.tasks import codedepth

            if corpus is None:
                raise ValueError("codedepth training needs the corpus")
            self.windows = codedepth.Windows(corpus, "train", length, **self.task_params)
            log.info("codedepth training windows L%d: %s", length, self.windows.stats)

    def draw(self, n: int) -> dict[str, np.ndarray]:
        """``n`` new sequences: ``tokens`` and ``labels`` (and the task's other targets)."""
        if self.windows is not None:
            return self.windows.draw(n, self.rng)
        return generate(self.task, n, self.length, self.rng, self.task_params)

    @property
    def state(self) -> dict:
        return self.rng.bit_generator.state

    def restore(self, state: dict) -> None:
        self.rng.bit_generator.state = state


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
        from statelayers import files
        from statelayers.tasks import codedepth

        if corpus is None:
            raise ValueError("codedepth data needs the corpus file")
        arrays, stats = codedepth.windows(
            files.read_parquet(corpus), split, n, length, rng, **dict(task_params or {})
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
