"""Activation patching of one run: every layer and position, both directions."""

from pathlib import Path

import numpy as np

from statelayers import console, files, runtime
from statelayers.measure.patching import corrupted_pairs, patching_rows
from statelayers.models.tagger import load_model
from statelayers.tasks.data import to_arrays

sm = snakemake  # noqa: F821
console.start_job(sm.log[0], sm.threads)
settings = sm.params.patching
data = to_arrays(files.read_parquet(sm.input.test))
pairs = corrupted_pairs(
    sm.wildcards.task,
    data["tokens"],
    data["labels"],
    sm.params.task_params,
    n_pairs=settings["pairs"],
    earliest=settings["earliest"],
    rng=np.random.default_rng([settings["seed"], int(sm.wildcards.seed)]),
)
model = load_model(Path(sm.input.weights).parent, sm.params.mamba, sm.params.device)
files.write_csv(files.keyed_frame(patching_rows(model, pairs), runtime.run_key(sm.wildcards)), sm.output[0])
