"""Concatenate per-run CSVs into one table."""

import pandas as pd

from statelayers import console, files

sm = snakemake  # noqa: F821
console.start_job(sm.log[0])
files.write_csv(pd.concat([pd.read_csv(path) for path in sm.input], ignore_index=True), sm.output[0])
