"""The spec of a model, in a module of its own (and torch-free) so that pretrained
backbones (:mod:`statelayers.models.pretrained`) and the tagger
(:mod:`statelayers.models.tagger`) both build from it without importing each other."""

from __future__ import annotations

from dataclasses import dataclass, field

from statelayers.models.registry import ARCHS


@dataclass(frozen=True)
class ModelSpec:
    """Everything needed to rebuild a model; saved beside its weights."""

    arch: str
    vocab_size: int
    num_classes: int
    d_model: int
    n_layers: int
    """``d_model`` and ``n_layers``: ``model`` of config/config.yaml, their one source (or a
    pretrained backbone's own)."""
    width: int | None = None
    """The architecture's width knob; ``None`` until matched (or for lstm/gru)."""
    options: dict = field(default_factory=dict)
    """Architecture options passed to its config (heads, state size, ...)."""
    pretrained: str | None = None
    """Directory of a fetched pretrained backbone (:mod:`statelayers.models.pretrained`); its
    config, not ``options``, builds the backbone, and ``d_model``/``n_layers`` mirror it."""
    token_ids: tuple[int, ...] | None = None
    """With ``pretrained``: the backbone's vocabulary id of each task symbol."""
    added_tokens: int = 0
    """With ``pretrained``: embedding rows appended for symbols that are not one token."""
    start_token: bool = False
    """Prepend a fixed start symbol (id ``vocab_size``, one more embedding row) to every
    input inside the tagger, with no label: attention then has a position to put weight
    on that no input token claims. Callers still see positions 1..L only
    (:class:`statelayers.models.tagger.SequenceTagger`). Small models only: a pretrained
    backbone keeps the inputs it was trained on."""

    def __post_init__(self) -> None:
        if self.arch not in ARCHS:
            raise ValueError(f"unknown architecture {self.arch!r}; expected one of {ARCHS}")
        if self.start_token and self.pretrained:
            raise ValueError("start_token applies to the small models only, not to a pretrained backbone")

    @property
    def embedding_rows(self) -> int:
        """Rows of the input embedding of a small model: the task's symbols, plus the start symbol."""
        return self.vocab_size + self.start_token
