"""Conv1D attribution, the inference ablation: what a trained Mamba / Mamba-2 loses
when every mixer's short causal convolution becomes the identity
(:func:`statelayers.models.tagger.make_conv_identity`, which acts on the weights and
hence on every execution path).

The trained no-conv variants (``mamba_noconv``, ``mamba2_noconv``) are ordinary runs; the
comparison of both ablations with the family model is :mod:`statelayers.report.conv1d`.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from statelayers.measure.behaviour import behaviour
from statelayers.models.tagger import make_conv_identity


def inference_behaviour(model, test_files: Mapping[int, str | Path]) -> list[dict]:
    """Behaviour rows of ``model`` with its Conv1D set to identity (modifies ``model``)."""
    if make_conv_identity(model) == 0:
        raise ValueError(f"{model.spec.arch} has no Conv1D to ablate")
    return behaviour(model, test_files)
