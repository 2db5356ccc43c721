"""Every erasure at every layer of one run, at every intervention length."""

from pathlib import Path

from statelayers import io, runtime
from statelayers.measure.interventions import InterventionConfig, intervention_rows
from statelayers.measure.probes import ProbeConfig
from statelayers.models.tagger import load_model
from statelayers.tasks.data import to_arrays

sm = snakemake  # noqa: F821
runtime.start(sm.log[0], sm.threads)
settings = dict(sm.params.interventions)
sequences = settings.pop("sequences")
model = load_model(Path(sm.input.weights).parent, sm.params.mamba, sm.params.device)
test_data = {
    length: to_arrays(io.read_parquet(path).head(sequences))
    for length, path in runtime.length_inputs(sm.input).items()
}
config = InterventionConfig(**{**settings, "pca_k": tuple(settings["pca_k"])})
rows = intervention_rows(
    model, sm.input.probe, test_data, config, ProbeConfig(**sm.params.probe), run_seed=int(sm.wildcards.seed)
)
io.write_csv(io.keyed_frame(rows, runtime.run_key(sm.wildcards)), sm.output[0])
