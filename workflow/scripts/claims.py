"""Which of the paper's findings this run reproduces (rules: statelayers.claims)."""

import pandas as pd

from statelayers import io, runtime
from statelayers.claims import check_claims, claims_markdown
from statelayers.stats import BootstrapConfig

sm = snakemake  # noqa: F821
runtime.start(sm.log[0])
tables = {name: pd.read_csv(path) for name, path in sm.input.items()}
claims = check_claims(**tables, scale=sm.params.scale, config=BootstrapConfig(**sm.params.bootstrap))
io.write_csv(claims, sm.output.table)
io.write_with(lambda tmp: tmp.write_text(claims_markdown(claims)), sm.output.markdown)
