"""Every pair's learnability summary and curve, in one table each; the table gains each
pair's study budget."""

import pandas as pd

from statelayers import io, runtime
from statelayers.report.learnability import with_study_budgets

sm = snakemake  # noqa: F821
runtime.start(sm.log[0])
table = pd.concat(map(pd.read_csv, sm.input.summaries), ignore_index=True)
io.write_csv(with_study_budgets(table, sm.params.default_steps, sm.params.eval_every), sm.output.table)
io.write_csv(pd.concat(map(pd.read_csv, sm.input.curves), ignore_index=True), sm.output.curves)
