"""Train one (architecture, task, seed) and save the checkpoint with what built it."""

from pathlib import Path

from statelayers import runtime
from statelayers.training import train_checkpoint

sm = snakemake  # noqa: F821
runtime.start(sm.log[0], sm.threads)
train_checkpoint(
    sm.params.spec,
    sm.params.training,
    seed=sm.params.seed,
    device=sm.params.device,
    mamba=sm.params.mamba,
    data_seed=sm.params.data_seed,
    train_length=sm.params.train_length,
    validation_path=sm.input.validation,
    corpus_path=sm.input.get("corpus"),
    out_dir=Path(sm.output.weights).parent,
    history_path=sm.output.history,
)
