"""One short run of the hyper-parameter sweep: its validation checks, summarised in one row."""

from statelayers import files, runtime
from statelayers.training import RunInputs, sweep_point

sm = snakemake  # noqa: F821
runtime.start(sm.log[0], sm.threads)
row = sweep_point(RunInputs.of_job(sm.params.run, sm.input))
files.write_csv(files.keyed_frame([row], runtime.run_key(sm.wildcards) | sm.params.point), sm.output[0])
