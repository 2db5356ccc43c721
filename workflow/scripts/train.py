"""Train one (architecture, task, seed) and save the checkpoint with what built it."""

from pathlib import Path

from statelayers import runtime
from statelayers.training import RunInputs, train_checkpoint

sm = snakemake  # noqa: F821
runtime.start(sm.log[0], sm.threads)
train_checkpoint(
    RunInputs.of_job(sm.params.run, sm.input),
    out_dir=Path(sm.output.weights).parent,
    history_path=sm.output.history,
)
