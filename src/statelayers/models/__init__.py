"""Stage 2, the models: the architecture registry, the spec, the tagger and its
builders, pretrained backbones, the Mamba backends and the CPU kernels.

Kept empty of imports so that :mod:`statelayers.models.registry` (read by the
Snakefile and the figure jobs) loads without torch.
"""
