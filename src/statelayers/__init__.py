"""Layerwise state encoding in sequence models: tasks, models, training, probes.

The library behind the Snakemake workflow in this repository. Every module is usable
without Snakemake; ``workflow/scripts`` only moves files in and out of these functions.
"""

__version__ = "0.1.0"
