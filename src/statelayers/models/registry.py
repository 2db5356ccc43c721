"""Every architecture of the study in one table, importable without torch.

The Snakefile reads it at parse time and the figure jobs read it for their legends,
so neither pays for importing torch. An architecture is one :class:`Arch` row here;
the config schema's enum lists the same names (a test checks). A stack of torch RNN
layers needs only its row (``rnn_cell``); another new family also needs its builder in
:mod:`statelayers.models.tagger` (docs/extending.md).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Arch:
    """One architecture: what it is built from and how the report shows it."""

    name: str
    family: str
    """The family it is built from and trained like (itself for the five families)."""
    display: str
    """Its name in figures and in docs/results.md."""
    colour: str
    marker: str
    width_step: int | None = None
    """Step of its width knob in parameter matching; ``None``: no knob (count kept)."""
    hf_model_type: str | None = None
    """transformers' ``model_type`` of a pretrained backbone of this family, if any."""
    rnn_cell: str | None = None
    """For a stack of single-layer torch RNNs: the ``torch.nn`` class of its layers."""
    conv1d: bool = True
    """``False``: every mixer's Conv1D is fixed to the identity (the Conv1D ablation)."""
    signed: bool = False
    """``True``: the SSM's decay ``exp(dt A)`` becomes ``2 exp(dt A) - 1``, in ``(-1, 1]``
    (:func:`statelayers.models.mamba_scan.transitions`)."""


_ROWS = (  # name, family, display name, colour, marker, width-knob step
    Arch("transformer", "transformer", "Transformer", "#1f77b4", "o", 16, hf_model_type="gpt_neox"),
    Arch("mamba", "mamba", "Mamba", "#d62728", "s", 16, hf_model_type="mamba"),
    Arch("mamba2", "mamba2", "Mamba-2", "#ff7f0e", "D", 1, hf_model_type="mamba2"),
    Arch("lstm", "lstm", "LSTM", "#2ca02c", "^", rnn_cell="LSTM"),
    Arch("gru", "gru", "GRU", "#9467bd", "v", rnn_cell="GRU"),
    # Conv1D-ablated variants: the base family with every block's Conv1D fixed to identity,
    # built with the base family's options and trained with its settings.
    Arch("mamba_noconv", "mamba", "Mamba without Conv1D", "#e377c2", "P", 16, conv1d=False),
    Arch("mamba2_noconv", "mamba2", "Mamba-2 without Conv1D", "#bcbd22", "X", 1, conv1d=False),
    # Signed-transition variants (Grazzi et al., "Unlocking State-Tracking in Linear RNNs
    # Through Negative Eigenvalues"): an extension, not a model of the paper reproduced here.
    Arch("mamba_signed", "mamba", "Mamba with signed transitions", "#8c564b", "*", 16, signed=True),
    Arch("mamba2_signed", "mamba2", "Mamba-2 with signed transitions", "#17becf", "h", 1, signed=True),
)
REGISTRY: dict[str, Arch] = {arch.name: arch for arch in _ROWS}

ARCHS = tuple(REGISTRY)
"""Every architecture name, in the order figures and tables list them."""
FAMILIES = tuple(arch.name for arch in _ROWS if arch.family == arch.name)
"""The study's five architecture families."""
VARIANTS = {arch.name: arch.family for arch in _ROWS if arch.family != arch.name}
"""Every variant (Conv1D-ablated or signed) -> the family it is built from."""
NO_CONV = {arch.name: arch.family for arch in _ROWS if not arch.conv1d}
"""Conv1D-ablated variant -> the family it is built from."""
SIGNED = frozenset(arch.name for arch in _ROWS if arch.signed)
"""The variants whose SSM transitions are signed."""
SSM = ("mamba", "mamba2")
"""The state-space families: their mixers have a Conv1D and run under a Mamba backend."""
RECURRENT = ("lstm", "gru")
"""The paper's recurrent baselines (finding 1 compares them with the SSMs and the Transformer)."""
RNN_CELLS = {arch.name: arch.rnn_cell for arch in _ROWS if arch.rnn_cell}
"""Architectures built as stacks of single-layer torch RNNs -> the ``torch.nn`` class;
a new one needs only its row here (and its name in the config schema's enum)."""
TRAINING_TIME_ORDER = ("lstm", "gru", "transformer", "mamba", "mamba2")
"""The families by training-job wall time at the default scale, shortest first (docs/cost.md,
"The default study on 2 CPU cores"): the workflow starts the longest first."""
PRETRAINED_MODEL_TYPES = {arch.hf_model_type: arch.name for arch in _ROWS if arch.hf_model_type}
"""transformers ``model_type`` -> the architecture family it belongs to here."""


def base_arch(arch: str) -> str:
    """The family an architecture is built from (itself for a family or an unknown name)."""
    return VARIANTS.get(arch, arch)


def display_name(arch: str) -> str:
    """How figures and docs/results.md name ``arch`` (a pretrained model keeps its own name)."""
    return REGISTRY[arch].display if arch in REGISTRY else arch


def line_style(arch: str) -> tuple[str, str | None, str]:
    """(label, colour, marker) of ``arch``'s lines; matplotlib's next colour when unknown."""
    if arch not in REGISTRY:
        return arch, None, "o"
    row = REGISTRY[arch]
    return row.display, row.colour, row.marker


def layer_label(layer: int) -> str:
    """A state tap in the paper's numbering: tap 0 (the embedding) is ``emb``, tap ``i``
    (block ``i``) is ``L{i-1}``."""
    return "emb" if layer == 0 else f"L{layer - 1}"
