"""Validation accuracy against training step, every run."""

import pandas as pd

from statelayers import console
from statelayers.report import figures

sm = snakemake  # noqa: F821
console.start_job(sm.log[0])
figures.learning_curves(
    pd.read_csv(sm.input.curves), pd.read_csv(sm.input.training), [sm.output.png, sm.output.pdf]
)
