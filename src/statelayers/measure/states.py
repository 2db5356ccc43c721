"""Every layer's hidden states as Parquet, one row per (layer, sequence, position).

Schema of ``results/states/{arch}/{task}/seed{seed}/{split}_L{length}.parquet``:

=========  ===========================  ==========================================
column     type                         meaning
=========  ===========================  ==========================================
layer      int8                         0 = embedding output, i = output of block i
seq_id     int32                        row of the data file the states come from
pos        int16                        position in the sequence, 0-based
token      int8                         input token at ``pos``
labels     int8                         training label at ``pos``
depth      int8                         stack depth at ``pos`` (dyck only)
vector     fixed_size_list<float32>[d]  the hidden state
=========  ===========================  ==========================================

Rows are sorted by (layer, seq_id, pos). Read the layers back, one at a time, with :func:`read_layers`.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from statelayers import files

if TYPE_CHECKING:  # reading states (the probe jobs) needs no torch
    from statelayers.models.tagger import SequenceTagger

TARGET_COLUMNS = ("labels", "depth")


def layer_states(model: SequenceTagger, tokens: np.ndarray) -> np.ndarray:
    """Hidden states ``(layers, n, length, d_model)`` as float32."""
    from statelayers.models.inference import predict

    return predict(model, tokens, keep_states=len(tokens))[1]


def states_table(states: np.ndarray, data: dict[str, np.ndarray]) -> pa.Table:
    layers, n, length, d = states.shape

    def tile(values: np.ndarray, dtype) -> np.ndarray:
        return np.tile(values.reshape(-1).astype(dtype), layers)

    columns = {
        "layer": np.repeat(np.arange(layers, dtype=np.int8), n * length),
        "seq_id": tile(np.repeat(data["seq_id"], length), np.int32),
        "pos": tile(np.tile(np.arange(length), n), np.int16),
        "token": tile(data["tokens"], np.int8),
    }
    columns |= {name: tile(data[name], np.int8) for name in TARGET_COLUMNS if name in data}
    vectors = pa.FixedSizeListArray.from_arrays(pa.array(states.reshape(-1)), d)
    return pa.table({**{k: pa.array(v) for k, v in columns.items()}, "vector": vectors})


def write_states(model: SequenceTagger, data: dict[str, np.ndarray], path: str | Path) -> None:
    files.write_parquet(states_table(layer_states(model, data["tokens"]), data), path)


def head(data: dict[str, np.ndarray], n: int | None) -> dict[str, np.ndarray]:
    """The first ``n`` sequences (all for ``None``) of the arrays of a data file."""
    return {name: values[:n] for name, values in data.items()}


def read_layers(path: str | Path) -> Iterator[tuple[int, dict[str, np.ndarray]]]:
    """Yield ``(layer, columns)`` with ``columns["vector"]`` as an ``(rows, d)`` array."""
    table = files.read_table(path)
    for layer in pc.unique(table["layer"]).to_pylist():
        part = table.filter(pc.equal(table["layer"], layer))
        vector = part["vector"].combine_chunks()
        columns = {
            name: part[name].to_numpy() for name in part.column_names if name not in ("vector", "layer")
        }
        columns["vector"] = vector.values.to_numpy().reshape(len(part), vector.type.list_size)
        yield layer, columns
