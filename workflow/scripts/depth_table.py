"""Depth distribution of a task's test sequences at every length (Dyck: the sampler's
profile; Code-Depth: the nesting of the sampled code windows)."""

from statelayers import console, files
from statelayers.tasks.data import to_arrays
from statelayers.tasks.formal import depth_table

sm = snakemake  # noqa: F821
console.start_job(sm.log[0])
depths = {
    length: to_arrays(files.read_parquet(path))[sm.params.column]
    for length, path in zip(sm.params.lengths, sm.input, strict=True)
}
files.write_csv(depth_table(depths, sm.params.max_depth), sm.output[0])
