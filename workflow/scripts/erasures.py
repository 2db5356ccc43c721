"""Every erasure at every layer of one run, at every erasure length."""

from pathlib import Path

from statelayers import console, files, runtime
from statelayers.measure.erasures import ErasureConfig, erasure_rows
from statelayers.measure.probes import ProbeConfig
from statelayers.models.tagger import load_model
from statelayers.tasks.data import to_arrays

sm = snakemake  # noqa: F821
console.start_job(sm.log[0], sm.threads)
settings = dict(sm.params.erasures)
sequences = settings.pop("sequences")
model = load_model(Path(sm.input.weights).parent, sm.params.mamba, sm.params.device)
test_data = {
    length: to_arrays(files.read_parquet(path).head(sequences))
    for length, path in runtime.length_inputs(sm.input).items()
}
config = ErasureConfig.from_settings(settings)
rows = erasure_rows(
    model, sm.input.probe, test_data, config, ProbeConfig(**sm.params.probe), run_seed=int(sm.wildcards.seed)
)
files.write_csv(files.keyed_frame(rows, runtime.run_key(sm.wildcards)), sm.output[0])
