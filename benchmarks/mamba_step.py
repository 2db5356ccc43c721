"""Time one CPU training step of Mamba-1 against the LSTM, side by side in one process.

Usage: ``python benchmarks/mamba_step.py [--threads 2] [--steps 8] [--repeats 3]``

The models are the workflow's: 4 layers, d_model 128, parameter-matched to 830K (so
Mamba's inner width is 448), one AdamW step on a batch of 64 parity sequences of
length 40. Rows: the LSTM; Mamba with this package's scan and causal convolution
(:mod:`statelayers.mamba_scan`, :mod:`statelayers.causal_conv`); Mamba with
transformers' PyTorch fallback (its sequential scan and grouped ``F.conv1d``); and
Mamba with this package's convolution and the scan replaced by its scan-free part
(``D u`` gated by ``silu(z)``), a lower bound on what any scan can reach inside
transformers' mixer (projections, Conv1D, activations).
"""

from __future__ import annotations

import argparse
import time

import torch
import torch.nn.functional as F
from transformers.models.mamba import modeling_mamba

from statelayers.models import build_model, matched_spec
from statelayers.train import TrainConfig, accumulate_gradients, parameter_groups


def scan_free(hidden_states, dt, A, B, C, D=None, z=None, **_):
    """The selective scan without its recurrence; every input still receives a gradient."""
    touch = 0 * (dt.sum() + A.sum() + B.sum() + C.sum())
    return (hidden_states * D[None, :, None] + touch) * F.silu(z)


def step_seconds(arch: str, scan: str, steps: int, batch: int = 64, length: int = 40) -> float:
    """Mean seconds per step; ``scan`` is ``fast``, ``reference`` or ``scan-free``."""
    torch.manual_seed(0)
    spec = matched_spec(arch, "parity", None, d_model=128, n_layers=4, options={}, target_params=830_000)
    model = build_model(spec, {"backend": "torch", "scan": "fast" if scan == "scan-free" else scan}).train()
    if scan == "scan-free":  # after build_model, which points the scan at the backend's
        modeling_mamba.mamba_selective_scan = scan_free
    config = TrainConfig(batch_size=batch)
    optimizer = torch.optim.AdamW(parameter_groups(model, config.weight_decay), lr=config.lr)
    tokens = torch.randint(0, spec.vocab_size, (batch, length))
    labels = torch.randint(0, spec.num_classes, (batch, length))

    def step() -> None:  # what statelayers.train.train does per step, without the schedule
        optimizer.zero_grad(set_to_none=True)
        accumulate_gradients(model, tokens, labels, config, torch.device("cpu"))
        torch.nn.utils.clip_grad_norm_(model.parameters(), config.grad_clip)
        optimizer.step()

    step()  # warm-up: allocator and kernel selection
    start = time.perf_counter()
    for _ in range(steps):
        step()
    return (time.perf_counter() - start) / steps


ROWS = {
    "lstm": ("lstm", "fast"),
    "mamba, fast scan + conv": ("mamba", "fast"),
    "mamba, transformers' fallback": ("mamba", "reference"),
    "mamba, scan-free floor": ("mamba", "scan-free"),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument(
        "--repeats", type=int, default=3, help="interleaved rounds, fastest kept (the fallback runs once)"
    )
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    rounds: dict[str, list[float]] = {name: [] for name in ROWS}
    for round_ in range(args.repeats):
        for name, (arch, scan) in ROWS.items():
            if scan == "reference" and round_ > 0:
                continue  # 20-40 x slower than the rest; its noise does not matter
            steps = max(1, args.steps // 4) if scan == "reference" else args.steps
            rounds[name].append(step_seconds(arch, scan, steps))
    rows = {name: min(seconds) for name, seconds in rounds.items()}
    lstm = rows["lstm"]
    header = f"({args.threads} threads, best of {args.repeats})"
    print(f"{'training step':32s} {'ms':>8s} {'x lstm':>8s}   {header}")
    for name, seconds in rows.items():
        print(f"{name:32s} {seconds * 1e3:8.1f} {seconds / lstm:8.2f}")
    fallback = rows["mamba, transformers' fallback"] / rows["mamba, fast scan + conv"]
    print(f"fast scan + conv vs transformers' fallback: {fallback:.1f}x faster")


if __name__ == "__main__":
    main()
