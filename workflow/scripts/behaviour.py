"""Token and sequence accuracy of one trained model at every evaluation length."""

from pathlib import Path

from statelayers import io, runtime
from statelayers.behaviour import behaviour
from statelayers.models import load_model

sm = snakemake  # noqa: F821
runtime.start(sm.log[0], sm.threads)
model = load_model(Path(sm.input.weights).parent, sm.params.mamba_scan, sm.params.device)
test_files = runtime.length_inputs(sm.input)
io.write_csv(io.keyed_frame(behaviour(model, test_files), runtime.run_key(sm.wildcards)), sm.output[0])
