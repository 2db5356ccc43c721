"""Every layer's hidden states on the probe split and at each evaluation length."""

from pathlib import Path

from statelayers import io, runtime
from statelayers.data import to_arrays
from statelayers.models import load_model
from statelayers.states import write_states

sm = snakemake  # noqa: F821
log = runtime.start(sm.log[0], sm.threads)
model = load_model(Path(sm.input.weights).parent, sm.params.mamba_scan, sm.params.device)
write_states(model, to_arrays(io.read_parquet(sm.input.probe)), sm.output.probe)
test_inputs = sorted(runtime.length_inputs(sm.input).items())
for (length, source), target in zip(test_inputs, sm.output.tests, strict=True):
    data = to_arrays(io.read_parquet(source).head(sm.params.test_sequences))
    write_states(model, data, target)
    log.info("states at length %d -> %s", length, target)
