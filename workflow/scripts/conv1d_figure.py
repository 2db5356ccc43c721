"""Accuracy change from removing Conv1D, per task, family and ablation."""

import pandas as pd

from statelayers import console
from statelayers.report import figures

sm = snakemake  # noqa: F821
console.start_job(sm.log[0])
figures.conv1d(pd.read_csv(sm.input[0]), [sm.output.png, sm.output.pdf])
