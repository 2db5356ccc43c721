"""Validation accuracy against step of every pair's learnability run."""

import pandas as pd

from statelayers import console
from statelayers.report import figures

sm = snakemake  # noqa: F821
console.start_job(sm.log[0])
figures.learnability(
    pd.read_csv(sm.input.curves),
    pd.read_csv(sm.input.table),
    [sm.output.png, sm.output.pdf],
    sm.params.criterion,
)
