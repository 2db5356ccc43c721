"""Five sequence taggers (and Conv1D-ablated or signed Mamba variants) behind one interface.

Every model maps tokens ``(batch, length)`` to per-token logits and exposes the
hidden state of every layer: index 0 is the embedding output, index ``i`` the
output of block ``i`` (before any final norm). States are read with forward hooks
on those modules (:meth:`SequenceTagger.forward`), which is also where later stages
edit them, so reading and editing use one mechanism for every architecture.

Backbones: GPT-NeoX (rotary positions), Mamba and Mamba-2 are transformers' models
built from their config classes; LSTM and GRU are stacks of single-layer torch
modules so that each layer's output exists.

Start token (``ModelSpec.start_token``): the tagger prepends one fixed symbol to every
input and drops its position again from everything it returns (logits, states) and
from everything it hands to an edit, so every caller keeps positions 1..L. The models
are causal, so the start position's state is the same for every input and no edit at
a later position can reach it.

Parameter matching: each architecture has one width knob (GPT-NeoX's MLP width and
Mamba's inner width, both in steps of 16; Mamba-2's integer ``expand``). The parameter
count is affine in the knob, so two instantiations give the line and the knob nearest
the target follows. LSTM and GRU at fixed ``d_model`` and depth have no such knob and
keep their count.
"""

from __future__ import annotations

import math
import pickle
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import asdict, replace
from pathlib import Path

import torch
from torch import nn

from statelayers import files
from statelayers.models.pretrained import pretrained_backbone
from statelayers.models.registry import NO_CONV, REGISTRY, RNN_CELLS, SIGNED, SSM, base_arch
from statelayers.models.spec import ModelSpec
from statelayers.tasks.formal import task_spec

StateEdit = Callable[[torch.Tensor], torch.Tensor]


def conv_layers(model: nn.Module) -> list[nn.Conv1d]:
    """Every Mamba / Mamba-2 mixer's depthwise causal Conv1D."""
    return [
        module.conv1d for module in model.modules() if isinstance(getattr(module, "conv1d", None), nn.Conv1d)
    ]


@torch.no_grad()
def make_conv_identity(model: nn.Module) -> int:
    """Fix every mixer's Conv1D to the identity and freeze it; return how many.

    The weights become a unit impulse at the last tap (the current position) and the
    bias zero, so ``conv(x)_t = x_t`` on every execution path: transformers' reference,
    :mod:`statelayers.models.causal_conv` and the CUDA kernels all read ``conv1d.weight``
    directly and never call the module (where a forward hook would never fire). The SiLU
    after the convolution stays.
    """
    convs = conv_layers(model)
    for conv in convs:
        conv.weight.zero_()
        conv.weight[:, :, -1] = 1.0
        if conv.bias is not None:
            conv.bias.zero_()
        conv.requires_grad_(False)
    return len(convs)


def _hf_backbone(spec: ModelSpec) -> nn.Module:
    if spec.pretrained:  # the architecture only: the weights come from the checkpoint
        return pretrained_backbone(spec, with_weights=False)
    from transformers import (
        GPTNeoXConfig,
        GPTNeoXModel,
        Mamba2Config,
        Mamba2Model,
        MambaConfig,
        MambaModel,
    )

    opts = dict(spec.options)
    common = dict(vocab_size=spec.embedding_rows, hidden_size=spec.d_model, num_hidden_layers=spec.n_layers)
    arch = base_arch(spec.arch)
    if arch == "transformer":
        config = GPTNeoXConfig(
            **common,
            num_attention_heads=opts.pop("heads", 4),
            intermediate_size=spec.width or 4 * spec.d_model,
            max_position_embeddings=opts.pop("max_positions", 2048),
            # transformers' defaults, stated so that a change of theirs cannot change the block:
            # rotary positions on a quarter of each head, attention and MLP in parallel.
            rotary_pct=opts.pop("rotary_pct", 0.25),
            use_parallel_residual=opts.pop("use_parallel_residual", True),
            hidden_dropout=0.0,
            attention_dropout=0.0,
            use_cache=False,
            **opts,
        )
        return GPTNeoXModel(config)
    if arch == "mamba":
        inner = spec.width or 2 * spec.d_model
        config = MambaConfig(
            **common,
            expand=max(1, round(inner / spec.d_model)),
            state_size=opts.pop("state_size", 16),
            use_cache=False,
            **opts,
        )
        # MambaConfig takes only an integer expand; MambaMixer reads intermediate_size.
        config.intermediate_size = inner
        return MambaModel(config)
    head_dim = opts.pop("head_dim", 32)
    a_init_range = opts.pop("A_init_range", None)
    expand = spec.width or 2
    config = Mamba2Config(
        **common,
        expand=expand,
        head_dim=head_dim,
        num_heads=expand * spec.d_model // head_dim,
        n_groups=1,
        state_size=opts.pop("state_size", 64),
        chunk_size=opts.pop("chunk_size", 64),
        use_cache=False,
        **opts,
    )
    model = Mamba2Model(config)
    if a_init_range is not None:
        uniform_a_init(model, *a_init_range)
    return model


@torch.no_grad()
def uniform_a_init(model: nn.Module, low: float, high: float) -> None:
    """Draw every Mamba-2 head's decay rate A uniformly from ``[low, high]``, as mamba-ssm's
    ``Mamba2(A_init_range=(1, 16))`` does; transformers sets head h's A to h + 1, so the
    range of decays depends on the number of heads."""
    for module in model.modules():
        if hasattr(module, "A_log") and hasattr(module, "dt_bias"):
            module.A_log.copy_(torch.empty_like(module.A_log).uniform_(low, high).log())


def _signed_scans() -> AbstractContextManager[None]:
    """The scans' signed mode, imported only by a signed model (the module imports
    transformers' Mamba modules, which no other family needs)."""
    from statelayers.models.mamba_scan import transitions

    return transitions(signed=True)


class RecurrentLayer(nn.Module):
    """One single-layer torch RNN (LSTM, GRU, ...) that returns only its output sequence."""

    def __init__(self, cell: type[nn.RNNBase], d_model: int):
        super().__init__()
        self.rnn = cell(d_model, d_model, batch_first=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.rnn(x)[0]


class RecurrentStack(nn.Module):
    def __init__(self, spec: ModelSpec):
        super().__init__()
        cell = getattr(nn, RNN_CELLS[spec.arch])
        self.embedding = nn.Embedding(spec.embedding_rows, spec.d_model)
        self.layers = nn.ModuleList(RecurrentLayer(cell, spec.d_model) for _ in range(spec.n_layers))

    def get_input_embeddings(self) -> nn.Module:
        return self.embedding

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        h = self.embedding(input_ids)
        for layer in self.layers:
            h = layer(h)
        return h


class Replay(nn.Module):
    """Stands in for a block: returns ``output`` (or, without one, its input unchanged),
    after ``start`` ``(1, 1, d)`` at the start position where the model has one."""

    def __init__(self, output: torch.Tensor | None = None, start: torch.Tensor | None = None):
        super().__init__()
        self.output = output
        self.start = start

    def forward(self, hidden_states: torch.Tensor, *args, **kwargs) -> torch.Tensor:
        if self.output is None:
            return hidden_states
        if self.start is None:
            return self.output
        start = self.start.to(self.output).expand(len(self.output), 1, -1)
        return torch.cat([start, self.output], dim=1)


class SequenceTagger(nn.Module):
    """A backbone plus a linear per-token classification head."""

    def __init__(self, spec: ModelSpec, backbone: nn.Module | None = None):
        super().__init__()
        self.spec = spec
        if backbone is None:
            backbone = RecurrentStack(spec) if spec.arch in RNN_CELLS else _hf_backbone(spec)
        self.backbone = backbone
        self.head = nn.Linear(spec.d_model, spec.num_classes)
        ids = None if spec.token_ids is None else torch.tensor(spec.token_ids)
        self.register_buffer("token_ids", ids, persistent=False)  # task symbols -> pretrained vocabulary
        self.offset = int(spec.start_token)
        """Positions before the first input token: 1 with a start token, else 0."""
        self.signed = spec.arch in SIGNED
        """Whether its SSM scans run with signed transitions (set around every forward pass)."""

    @property
    def taps(self) -> list[nn.Module]:
        """Modules whose outputs are the layer states: embedding, then each block."""
        return [self.backbone.get_input_embeddings(), *self.backbone.layers]

    @contextmanager
    def resumed_at(self, tap: int, state: torch.Tensor) -> Iterator[None]:
        """Within the context, forward passes skip every block before tap ``tap`` and
        take ``state`` as that tap's output (its clean value for the tokens passed).

        An edit at tap ``i`` leaves taps ``< i`` unchanged, so scoring many edits of one
        tap needs only the blocks after it: the cost falls with the depth of the tap.
        Edits and states at ``tap`` and later work as in a full pass; the states of
        earlier taps are not computed. Tap 0 (the embedding) is cheap and not skipped.
        """
        layers = self.backbone.layers
        start = self._start_states()[tap] if self.offset and tap > 0 else None
        skipped = {i: layers[i] for i in range(tap)}
        try:
            for i in range(tap):
                layers[i] = Replay(state, start) if i == tap - 1 else Replay()
            yield
        finally:
            for i, block in skipped.items():
                layers[i] = block

    def _logits(self, tokens: torch.Tensor) -> torch.Tensor:
        """Logits at every position the backbone sees, the start position included."""
        if self.offset:
            start = tokens.new_full((len(tokens), 1), self.spec.vocab_size)
            tokens = torch.cat([start, tokens], dim=1)
        if isinstance(self.backbone, RecurrentStack):
            return self.head(self.backbone(tokens))
        if self.token_ids is not None:
            tokens = self.token_ids[tokens]
        with _signed_scans() if self.signed else nullcontext():
            return self.head(self.backbone(input_ids=tokens, use_cache=False).last_hidden_state)

    @torch.no_grad()
    def _start_states(self) -> list[torch.Tensor]:
        """Every tap's state ``(1, 1, d)`` at the start position. The models are causal, so
        it is the same for every input, and a pass on the start symbol alone gives it:
        what :meth:`resumed_at` puts before the states it is given."""
        device = next(self.parameters()).device
        states: list[torch.Tensor | None] = [None] * len(self.taps)

        def hook(index: int):
            def record(module: nn.Module, args: tuple, output) -> None:
                states[index] = output[0] if isinstance(output, tuple) else output

            return record

        handles = [tap.register_forward_hook(hook(i)) for i, tap in enumerate(self.taps)]
        try:
            self._logits(torch.empty(1, 0, dtype=torch.long, device=device))
        finally:
            for handle in handles:
                handle.remove()
        return states

    def forward(
        self,
        tokens: torch.Tensor,
        edits: Mapping[int, StateEdit] | None = None,
        return_states: bool = False,
    ) -> torch.Tensor | tuple[torch.Tensor, list[torch.Tensor]]:
        """Logits ``(batch, length, classes)``; with ``return_states`` also every layer's state.

        ``edits[i]`` replaces the output of tap ``i`` (0 = embedding) before the rest of
        the model sees it; the returned states are the edited ones. Edits and states cover
        the input positions only: a start position is never handed to an edit, so it
        stays as the model computed it.
        """
        edits = dict(edits or {})
        offset = self.offset
        if not edits and not return_states:
            return self._logits(tokens)[:, offset:]
        states: list[torch.Tensor | None] = [None] * len(self.taps)

        def hook(index: int):
            def record(module: nn.Module, args: tuple, output):
                hidden = output[0] if isinstance(output, tuple) else output
                visible = hidden[:, offset:]
                if index in edits:
                    visible = edits[index](visible)
                    hidden = torch.cat([hidden[:, :offset], visible], dim=1) if offset else visible
                states[index] = visible
                if index not in edits:
                    return None
                return (hidden, *output[1:]) if isinstance(output, tuple) else hidden

            return record

        handles = [tap.register_forward_hook(hook(i)) for i, tap in enumerate(self.taps)]
        try:
            logits = self._logits(tokens)[:, offset:]
        finally:
            for handle in handles:
                handle.remove()
        return (logits, states) if return_states else logits


def count_parameters(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


def match_width(spec: ModelSpec, target: int) -> ModelSpec:
    """Set ``spec.width`` to the knob value whose parameter count is nearest ``target``."""
    step = REGISTRY[spec.arch].width_step
    if step is None:
        return spec
    at = {w: count_parameters(SequenceTagger(replace(spec, width=w))) for w in (step, 2 * step)}
    slope = at[2 * step] - at[step]
    ideal = step + (target - at[step]) / slope * step
    below = max(step, math.floor(ideal / step) * step)
    candidates = {w: at[step] + slope * (w - step) // step for w in (below, below + step)}
    return replace(spec, width=min(candidates, key=lambda w: abs(candidates[w] - target)))


def matched_spec(
    arch: str,
    task: str,
    task_params: Mapping | None,
    d_model: int,
    n_layers: int,
    options: Mapping,
    target_params: int,
) -> ModelSpec:
    """The spec of ``arch`` for ``task``, its width knob matched to ``target_params`` (a
    start token's embedding row included). ``options`` go to the backbone's config, except
    ``start_token`` (any architecture), which goes to the spec."""
    sizes = task_spec(task, task_params)
    options = dict(options)
    start_token = bool(options.pop("start_token", False))
    spec = ModelSpec(
        arch, sizes.vocab_size, sizes.num_classes, d_model, n_layers, options=options, start_token=start_token
    )
    return match_width(spec, target_params)


MAMBA_DEFAULTS = {"backend": "auto", "scan": "fast"}
"""Mamba / Mamba-2 execution settings (:mod:`statelayers.models.backends`) when a job passes none."""


def build_model(
    spec: ModelSpec,
    mamba: Mapping | None = None,
    backbone: nn.Module | None = None,
    device: torch.device | str = "cpu",
) -> SequenceTagger:
    """The tagger of ``spec`` (on ``backbone`` when given, e.g. pretrained weights).

    Mamba and Mamba-2 run under the backend of ``mamba`` (``backend``, ``scan``; see
    :func:`statelayers.models.backends.use_backend`) for a model on ``device``; the backend
    in use is ``model.backend`` and, under PyTorch, whose scan and convolution run
    (``fast`` or ``reference``) ``model.mamba_scan`` (both ``None`` where they do not apply).
    A signed variant needs the ``torch`` backend's ``fast`` scan, the only one with signed
    transitions: elsewhere it would silently run the default decay, so it is an error.
    """
    backend = scan = None
    family = base_arch(spec.arch)
    if family in SSM:
        from statelayers.models.backends import use_backend

        settings = {**MAMBA_DEFAULTS, **dict(mamba or {})}
        backend = use_backend(settings["backend"], device, settings["scan"])
        scan = settings["scan"] if backend == "torch" else None
        if spec.arch in SIGNED and scan != "fast":
            raise ValueError(
                f"{spec.arch} runs only under the torch backend's fast scan (here: backend {backend}, "
                f"scan {scan}); set training.mamba_backend: torch and mamba_scan: fast"
            )
    model = SequenceTagger(spec, backbone)
    model.backend, model.mamba_scan = backend, scan
    if spec.arch in NO_CONV:
        make_conv_identity(model)
    return model


def save_model(model: SequenceTagger, directory: str | Path, extra: Mapping | None = None) -> None:
    """``model.json`` (spec, parameter count, ``extra``) and ``model.pt`` (state dict), atomically."""
    directory = Path(directory)
    files.write_with(lambda p: torch.save(model.state_dict(), p), directory / "model.pt")
    files.write_json(
        {"spec": asdict(model.spec), "params": count_parameters(model), **dict(extra or {})},
        directory / "model.json",
    )


def load_model(directory: str | Path, mamba: Mapping | None = None, device: str = "cpu") -> SequenceTagger:
    """Rebuild a saved model in eval mode on ``device`` (``auto``, ``cpu`` or ``cuda``),
    Mamba under the backend of ``mamba`` (see :func:`build_model`)."""
    from statelayers.runtime import resolve_device

    directory = Path(directory)
    meta = files.read_json(directory / "model.json")
    resolved = resolve_device(device)
    model = build_model(ModelSpec(**meta["spec"]), mamba, device=resolved)
    try:
        state = torch.load(directory / "model.pt", map_location="cpu", weights_only=True)
    except (RuntimeError, EOFError, OSError, pickle.UnpicklingError) as err:
        raise files._unreadable(directory / "model.pt", err) from err
    model.load_state_dict(state)
    return model.to(resolved).eval()


def pretrained_tagger(spec: ModelSpec, mamba: Mapping | None = None, device: str = "cpu") -> SequenceTagger:
    """A fresh (seeded by the caller) head on the pretrained weights of ``spec.pretrained``."""
    return build_model(spec, mamba, backbone=pretrained_backbone(spec), device=device)
