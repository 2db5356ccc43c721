"""Parameter counts of the trained models against the matching target."""

from statelayers import console, files
from statelayers.report.tables import params_table

sm = snakemake  # noqa: F821
console.start_job(sm.log[0])
files.write_csv(
    params_table([files.read_json(path) for path in sm.input], sm.params.target_params), sm.output[0]
)
