"""Final validation accuracy of every sweep point against the learning rate."""

import pandas as pd

from statelayers import console
from statelayers.report import figures

sm = snakemake  # noqa: F821
console.start_job(sm.log[0])
figures.sweep(pd.read_csv(sm.input[0]), [sm.output.png, sm.output.pdf])
