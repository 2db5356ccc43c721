"""The sweep's grid points with the selected one per (architecture, task) (rules: statelayers.sweep)."""

import pandas as pd

from statelayers import console, files
from statelayers.sweep import sweep_table

sm = snakemake  # noqa: F821
console.start_job(sm.log[0])
files.write_csv(
    sweep_table(pd.concat([pd.read_csv(path) for path in sm.input], ignore_index=True)), sm.output[0]
)
