"""Per-layer probes of one run: fit at the training length, read out at every length."""

from statelayers import console, files, runtime
from statelayers.measure.probes import ProbeConfig, probe_layers

sm = snakemake  # noqa: F821
console.start_job(sm.log[0])  # no torch here; scikit-learn's BLAS threads come from Snakemake's env
rows = probe_layers(
    sm.input.probe,
    runtime.length_inputs(sm.input),
    fit_length=sm.params.fit_length,
    config=ProbeConfig(**sm.params.probe),
    control=sm.params.control,
)
files.write_csv(files.keyed_frame(rows, runtime.run_key(sm.wildcards)), sm.output[0])
