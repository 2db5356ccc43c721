"""Layerwise state encoding in sequence models: tasks, models, training, probes.

The library behind the Snakemake workflow in this repository. Every module is usable
without Snakemake; ``workflow/scripts`` only moves files in and out of these functions.

The subpackages are the stages of the study, and each imports only from earlier ones
(tests/test_structure.py checks): :mod:`~statelayers.tasks`, :mod:`~statelayers.models`,
:mod:`~statelayers.training` (with :mod:`~statelayers.sweep`), :mod:`~statelayers.measure`,
:mod:`~statelayers.report`. :mod:`~statelayers.files` and :mod:`~statelayers.runtime` serve them all.
"""

__version__ = "0.1.0"
