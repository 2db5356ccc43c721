"""Every run's probe rows, with its untrained twin's accuracy and the gains over the baselines."""

import pandas as pd

from statelayers import console, files
from statelayers.measure.probes import with_baselines

sm = snakemake  # noqa: F821
console.start_job(sm.log[0])
trained = pd.concat(map(pd.read_csv, sm.input.trained), ignore_index=True)
untrained = pd.concat(map(pd.read_csv, sm.input.untrained), ignore_index=True)
files.write_csv(with_baselines(trained, untrained), sm.output[0])
