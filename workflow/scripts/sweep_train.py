"""One short run of the hyper-parameter sweep: its validation checks, summarised in one row."""

from statelayers import console, files, runtime
from statelayers.sweep import point_row
from statelayers.training import RunInputs, train_without_checkpoint

sm = snakemake  # noqa: F821
console.start_job(sm.log[0], sm.threads)
inputs = RunInputs.of_job(sm.params.run, sm.input)
row = point_row(inputs.training, train_without_checkpoint(inputs))
files.write_csv(files.keyed_frame([row], runtime.run_key(sm.wildcards) | sm.params.point), sm.output[0])
