"""Erasure drop by layer, and against evaluation length."""

import pandas as pd

from statelayers import runtime
from statelayers.report import figures

sm = snakemake  # noqa: F821
runtime.start(sm.log[0])
ablations = pd.read_csv(sm.input.ablations)
figures.ablation_profiles(ablations, sm.params.fit_length, [sm.output.profiles_png, sm.output.profiles_pdf])
figures.ablation_ood(ablations, pd.read_csv(sm.input.readability), [sm.output.ood_png, sm.output.ood_pdf])
