"""Accuracy against evaluation length."""

import pandas as pd

from statelayers import console
from statelayers.report import figures

sm = snakemake  # noqa: F821
console.start_job(sm.log[0])
figures.behaviour(pd.read_csv(sm.input[0]), sm.params.train_length, [sm.output.png, sm.output.pdf])
