"""Depth distribution of the Dyck test sequences at every length (the sampler's profile)."""

from statelayers import io, runtime
from statelayers.data import to_arrays
from statelayers.tasks import depth_table

sm = snakemake  # noqa: F821
runtime.start(sm.log[0])
depths = {
    length: to_arrays(io.read_parquet(path))["depth"]
    for length, path in zip(sm.params.lengths, sm.input, strict=True)
}
io.write_csv(depth_table(depths, sm.params.max_depth), sm.output[0])
