"""Every run's steps, criterion and final validation accuracy, and its validation checks."""

import pandas as pd

from statelayers import console, files
from statelayers.report.training_tables import learning_curves, training_table

sm = snakemake  # noqa: F821
console.start_job(sm.log[0])
metas = [files.read_json(path) for path in sm.input.meta]
files.write_csv(training_table(metas), sm.output.training)
files.write_csv(learning_curves(metas, [pd.read_csv(path) for path in sm.input.history]), sm.output.curves)
