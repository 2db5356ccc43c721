"""Behaviour of one trained Mamba / Mamba-2 run with its Conv1D set to identity."""

from pathlib import Path

from statelayers import console, files, runtime
from statelayers.measure.conv1d import inference_behaviour
from statelayers.models.tagger import load_model

sm = snakemake  # noqa: F821
console.start_job(sm.log[0], sm.threads)
model = load_model(Path(sm.input.weights).parent, sm.params.mamba, sm.params.device)
rows = inference_behaviour(model, runtime.length_inputs(sm.input))
files.write_csv(files.keyed_frame(rows, runtime.run_key(sm.wildcards)), sm.output[0])
