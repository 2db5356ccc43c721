"""Generate one split of one task's data (schema: statelayers.tasks.data)."""

from statelayers import console, files
from statelayers.tasks.data import make_split

sm = snakemake  # noqa: F821
log = console.start_job(sm.log[0])
length = int(sm.wildcards.length)
table = make_split(
    sm.wildcards.task,
    sm.wildcards.split,
    sm.params.n,
    length,
    sm.params.seed,
    sm.params.task_params,
    corpus=sm.input.get("corpus"),
)
files.write_parquet(table, sm.output[0])
log.info("wrote %d sequences of length %d to %s", table.num_rows, length, sm.output[0])
