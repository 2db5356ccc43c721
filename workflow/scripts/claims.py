"""Which of the paper's findings this run reproduces (rules: statelayers.report.claims)."""

import pandas as pd

from statelayers import files, runtime
from statelayers.report.claims import check_claims, claims_markdown
from statelayers.report.stats import IntervalConfig

sm = snakemake  # noqa: F821
runtime.start(sm.log[0])
tables = {name: pd.read_csv(path) for name, path in sm.input.items()}
learnability = pd.DataFrame(sm.params.learnability) if sm.params.learnability else None
check = check_claims(
    **tables,
    scale=sm.params.scale,
    train_length=sm.params.train_length,
    config=IntervalConfig(**sm.params.statistics),
    learnability=learnability,
)
files.write_csv(check.verdicts, sm.output.table)
files.write_csv(check.subclaims, sm.output.subclaims)
markdown = claims_markdown(check, sm.params.train_length)
files.write_with(lambda tmp: tmp.write_text(markdown), sm.output.markdown)
