"""Every run's steps, criterion and final validation accuracy, and its validation checks."""

import pandas as pd

from statelayers import files, runtime
from statelayers.training import learning_curves, training_table

sm = snakemake  # noqa: F821
runtime.start(sm.log[0])
metas = [files.read_json(path) for path in sm.input.meta]
files.write_csv(training_table(metas), sm.output.training)
files.write_csv(learning_curves(metas, [pd.read_csv(path) for path in sm.input.history]), sm.output.curves)
