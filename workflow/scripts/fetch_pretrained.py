"""Fetch one pretrained model (hub id or local directory) into resources/models/."""

from statelayers import console
from statelayers.models.pretrained import fetch

sm = snakemake  # noqa: F821
console.start_job(sm.log[0])
fetch(sm.wildcards.model, sm.params.source, sm.output[0])
