"""Means over seeds with bootstrap intervals, and the shape of every layer profile."""

import pandas as pd

from statelayers import io, runtime
from statelayers.report.stats import BootstrapConfig, summary_tables

sm = snakemake  # noqa: F821
runtime.start(sm.log[0])
tables = summary_tables(
    pd.read_csv(sm.input.behaviour), pd.read_csv(sm.input.probes), BootstrapConfig(**sm.params.bootstrap)
)
for name, table in tables.items():
    io.write_csv(table, sm.output[name])
