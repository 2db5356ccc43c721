"""Every pair's learnability summary and curve, in one table each."""

import pandas as pd

from statelayers import io, runtime

sm = snakemake  # noqa: F821
runtime.start(sm.log[0])
io.write_csv(pd.concat(map(pd.read_csv, sm.input.summaries), ignore_index=True), sm.output.table)
io.write_csv(pd.concat(map(pd.read_csv, sm.input.curves), ignore_index=True), sm.output.curves)
