"""Erasure drop by layer, and against evaluation length."""

import pandas as pd

from statelayers import console
from statelayers.report import figures

sm = snakemake  # noqa: F821
console.start_job(sm.log[0])
erasures = pd.read_csv(sm.input.erasures)
figures.erasure_profiles(erasures, sm.params.fit_length, [sm.output.profiles_png, sm.output.profiles_pdf])
figures.erasure_ood(erasures, pd.read_csv(sm.input.readability), [sm.output.ood_png, sm.output.ood_pdf])
