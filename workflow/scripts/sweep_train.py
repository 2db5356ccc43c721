"""One short run of the hyper-parameter sweep: its validation checks, summarised in one row."""

from statelayers import io, runtime
from statelayers.training import sweep_point

sm = snakemake  # noqa: F821
runtime.start(sm.log[0], sm.threads)
row = sweep_point(
    sm.params.spec,
    sm.params.training,
    seed=sm.params.seed,
    device=sm.params.device,
    mamba=sm.params.mamba,
    data_seed=sm.params.data_seed,
    train_length=sm.params.train_length,
    validation_path=sm.input.validation,
    corpus_path=sm.input.get("corpus"),
)
io.write_csv(io.keyed_frame([row], runtime.run_key(sm.wildcards) | sm.params.point), sm.output[0])
