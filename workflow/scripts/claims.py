"""Which of the paper's findings this run reproduces, and under which alternative analysis
choices the verdicts hold (rules: statelayers.report.claims)."""

import pandas as pd

from statelayers import console, files
from statelayers.report.claims import Choices, check_claims, claims_markdown

sm = snakemake  # noqa: F821
console.start_job(sm.log[0])
tables = {name: pd.read_csv(path) for name, path in sm.input.items()}
learnability = pd.DataFrame(sm.params.learnability) if sm.params.learnability else None
choices = Choices(**sm.params.choices)
check = check_claims(
    **tables,
    scale=sm.params.scale,
    train_length=sm.params.train_length,
    choices=choices,
    alternatives=dict(sm.params.alternatives),
    learnability=learnability,
)
files.write_csv(check.verdicts, sm.output.table)
files.write_csv(check.subclaims, sm.output.subclaims)
files.write_csv(check.robustness, sm.output.robustness)
files.write_csv(check.extension, sm.output.extension)
markdown = claims_markdown(check, sm.params.train_length, choices.learned_accuracy)
files.write_with(lambda tmp: tmp.write_text(markdown), sm.output.markdown)
