"""Pretrained models' layer profiles: probe accuracy and erasure drop by layer."""

import pandas as pd

from statelayers import console
from statelayers.report import figures

sm = snakemake  # noqa: F821
console.start_job(sm.log[0])
figures.pretrained_profiles(
    pd.read_csv(sm.input.probes),
    pd.read_csv(sm.input.erasures),
    sm.params.fit_length,
    [sm.output.png, sm.output.pdf],
)
