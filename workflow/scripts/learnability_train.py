"""Seed 0 of one pair: its default run's validation checks where that run reached the
criterion, else those of a run to the learnability cap; the pair's summary and curve."""

from pathlib import Path

import pandas as pd

from statelayers import console, files
from statelayers.learnability import pair_checks
from statelayers.report.learnability import COLUMNS, CURVE_COLUMNS, summary
from statelayers.training import RunInputs

sm = snakemake  # noqa: F821
console.start_job(sm.log[0], sm.threads)
checks, cap = pair_checks(
    files.read_json(sm.input.default_meta),
    pd.read_csv(sm.input.default_history),
    RunInputs.of_job(sm.params.run, sm.input),
    resume_path=Path(sm.output.summary).with_suffix(".resume.pt"),
)
pair = sm.params.pair
criterion = sm.params.run["training"]["target_accuracy"]
files.write_csv(pd.DataFrame([pair | summary(checks, cap, criterion)])[COLUMNS], sm.output.summary)
files.write_csv(checks.assign(**pair, cap=cap)[CURVE_COLUMNS], sm.output.curve)
