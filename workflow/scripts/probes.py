"""Per-layer probes of one run: fit at the training length, read out at every length."""

from statelayers import io, runtime
from statelayers.probes import ProbeConfig, probe_layers

sm = snakemake  # noqa: F821
runtime.start(sm.log[0], sm.threads)
rows = probe_layers(
    sm.input.probe,
    dict(zip(sm.params.eval_lengths, sm.input.tests, strict=True)),
    fit_length=sm.params.fit_length,
    config=ProbeConfig(**sm.params.probe),
)
io.write_csv(io.keyed_frame(rows, runtime.run_key(sm.wildcards)), sm.output[0])
