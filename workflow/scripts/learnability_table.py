"""Every pair's learnability summary and curve, in one table each; the table gains each
pair's default run's last validation check and its study budget."""

import pandas as pd

from statelayers import console, files
from statelayers.learnability import validation_checks
from statelayers.report.learnability import with_study_budgets

sm = snakemake  # noqa: F821
console.start_job(sm.log[0])
table = pd.concat(map(pd.read_csv, sm.input.summaries), ignore_index=True)
# One row per pair in the order of the default runs' histories (both expanded alike).
defaults = pd.DataFrame(sm.params.default_training).assign(
    default_val_accuracy=[
        validation_checks(pd.read_csv(path))["validation_token_accuracy"].iloc[-1]
        for path in sm.input.default_histories
    ]
)
budgets = with_study_budgets(table, defaults)
files.write_csv(budgets, sm.output.table)
files.write_csv(pd.concat(map(pd.read_csv, sm.input.curves), ignore_index=True), sm.output.curves)
