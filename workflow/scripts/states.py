"""Every layer's hidden states for data files: the probe split, or each evaluation length."""

from pathlib import Path

from statelayers import io, runtime
from statelayers.data import to_arrays
from statelayers.models import load_model
from statelayers.states import write_states

sm = snakemake  # noqa: F821
log = runtime.start(sm.log[0], sm.threads)
model = load_model(Path(sm.input.weights).parent, sm.params.mamba_scan, sm.params.device)
per_length = runtime.length_inputs(sm.input)
sources = [per_length[length] for length in sorted(per_length)] if per_length else [sm.input.data]
for source, target in zip(sources, sm.output, strict=True):
    write_states(model, to_arrays(io.read_parquet(source).head(sm.params.sequences)), target)
    log.info("states of %s -> %s", source, target)
