"""Most readable against most necessary layer, per run and erasure method."""

import pandas as pd

from statelayers import console, files
from statelayers.report.tables import readability_vs_causality

sm = snakemake  # noqa: F821
console.start_job(sm.log[0])
table = readability_vs_causality(pd.read_csv(sm.input.probes), pd.read_csv(sm.input.erasures))
files.write_csv(table, sm.output[0])
