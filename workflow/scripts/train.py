"""Train one (architecture, task, seed) and save the checkpoint with what built it."""

from pathlib import Path

from statelayers import console, files
from statelayers.training import RunInputs, train_checkpoint

sm = snakemake  # noqa: F821
console.start_job(sm.log[0], sm.threads)
train_checkpoint(
    RunInputs.of_job(sm.params.run, sm.input),
    out_dir=Path(sm.output.weights).parent,
    history_path=sm.output.history,
)
wildcards = sm.wildcards
run = f"{wildcards.arch} on {wildcards.task}, seed {wildcards.seed}"
console.announce(console.training_line(run, files.read_json(sm.output.meta)))
