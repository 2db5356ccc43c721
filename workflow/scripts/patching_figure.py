"""Heat maps of the logit gap recovered by patching one layer at one position."""

import pandas as pd

from statelayers import console
from statelayers.report import figures

sm = snakemake  # noqa: F821
console.start_job(sm.log[0])
figures.patching_heatmaps(pd.read_csv(sm.input[0]), [sm.output.png, sm.output.pdf])
