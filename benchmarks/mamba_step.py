"""Time one CPU training step of Mamba-1 and Mamba-2 against the LSTM, side by side in a job's process.

Usage: ``python benchmarks/mamba_step.py [--threads 1 2] [--steps 8] [--repeats 3]
[--csv PATH] [--compile] [--profile MODEL] [--ssd LENGTH ...]``

The models are the workflow's (``model`` in config/config.yaml: 4 layers, d_model 128,
parameter-matched to 830K, Mamba-2 with its state size, head size and chunk), one
AdamW step of :mod:`statelayers.training` on a batch (the study's ``batch_size``) of parity
sequences of length 40; Mamba-2 twice: with its family's options, and with those it takes on
parity (``model.options`` ``mamba2/parity``).
Rows: the LSTM; Mamba and Mamba-2 with the ``fast`` path (the fused numba kernels of
:mod:`statelayers.models.kernels`, and for Mamba-2 in training its fused block,
:mod:`statelayers.models.kernels.mamba2_block`, with SSD's quadratic single-chunk form,
:mod:`statelayers.models.kernels.ssd_quadratic`); Mamba-2 with the mixer's unfused path
instead of the block (the same kernels, each on its own copies), what the block saves;
Mamba-2 with its step-by-step SSD kernel instead of the quadratic form, the comparison
that decides between the two; both on the path ``fast`` takes without numba, which was
``fast`` on CPU before the kernels (this package's PyTorch scan and shifted-add
convolution; transformers' chunked scan for Mamba-2); both with transformers' PyTorch
code (``reference``); and Mamba with its scan replaced by the
scan-free part (``D u`` gated by ``silu(z)``), a floor for any scan inside
transformers' mixer (projections, Conv1D, activations), and Mamba-2 likewise with its SSD
replaced by the skip ``D x`` in the unfused path (the mixer's projections, Conv1D and
gated norm remain), with
its family's options and with parity's. Rounds are interleaved and the
fastest of each row kept; the reference rows run once (10-300 x slower, their noise
does not matter). ``--csv`` writes ``model, threads, ms_per_step, ratio_to_lstm``.

Each thread count runs in its own child process started with a Snakemake job's thread
settings (:data:`THREAD_VARIABLES`), so a one-thread row uses one core, as a one-thread
job does, and with a job's allocator setting (:func:`statelayers.runtime.keep_freed_memory`).

``--compile`` times ``python -m statelayers.models.kernels`` (a process that imports torch and
numba and runs each kernel forward and backward once) with an empty numba cache, then
with the cache that run left: the first-call cost of a job on a cold and a warm cache.
``--profile MODEL`` prints torch.profiler's top operations of that row's step (where
the remaining time goes). ``--exp`` times the kernels' inner loop, ``exp(dt * A)`` over a
block of channels, with this package's vectorisable float32 exponential and with
``math.exp`` (libm's scalar ``expf``, what numba emits without SVML). ``--ssd 40 64``
times Mamba-2's two CPU forms of SSD alone, forward and forward plus backward, at the
study's sizes and the given lengths, and exits. ``--in-step`` times each kernel of
Mamba-2's fused block per call inside the training step, and then alone on the
step's last arguments (what the per-kernel timings of benchmarks/README.md measure), and
exits.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import dataclasses
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from unittest import mock

import pandas as pd
import torch
import torch.nn.functional as F
import yaml
from transformers.models.mamba import modeling_mamba
from transformers.models.mamba2 import modeling_mamba2

from statelayers import runtime
from statelayers.models import causal_conv, mamba_scan
from statelayers.models.kernels import mamba2_block, ssd, ssd_quadratic
from statelayers.models.tagger import build_model, matched_spec
from statelayers.settings import resolve
from statelayers.training import TrainConfig, make_optimizer, training_step

CONFIG = Path(__file__).resolve().parents[1] / "config" / "config.yaml"
ROWS = {
    "lstm": ("lstm", "fast"),
    "mamba": ("mamba", "fast"),
    "mamba2": ("mamba2", "fast"),
    "mamba2, parity's options": ("mamba2", "fast-parity"),
    "mamba2, step-by-step SSD kernel": ("mamba2", "ssd-steps"),
    "mamba2, unfused mixer": ("mamba2", "unfused"),
    "mamba, PyTorch path (before the kernels)": ("mamba", "pytorch"),
    "mamba2, PyTorch path (before the kernels)": ("mamba2", "pytorch"),
    "mamba, scan-free floor": ("mamba", "scan-free"),
    "mamba2, scan-free floor": ("mamba2", "scan-free"),
    "mamba2, parity's options, scan-free floor": ("mamba2", "scan-free-parity"),
    "mamba, transformers' fallback": ("mamba", "reference"),
    "mamba2, transformers' fallback": ("mamba2", "reference"),
}


def scan_free(hidden_states, dt, A, B, C, D=None, z=None, **_):
    """The selective scan without its recurrence; every input still receives a gradient."""
    touch = 0 * (dt.sum() + A.sum() + B.sum() + C.sum())
    return (hidden_states * D[None, :, None] + touch) * F.silu(z)


def scan_free_chunks(x, dt, A, B, C, chunk_size, D=None, **_):
    """Mamba-2's SSD without its recurrence: the skip ``D x``; every input still receives a gradient."""
    touch = 0 * (dt.sum() + A.sum() + B.sum() + C.sum())
    return x * D[:, None] + touch


def make_step(arch: str, scan: str, batch: int | None = None, length: int = 40):
    """One training step of the workflow's ``arch`` as a closure; ``scan`` is ``fast``,
    ``ssd-steps`` (``fast`` with Mamba-2's step-by-step SSD kernel at every length),
    ``pytorch`` (``fast`` as if numba were missing), ``reference``, ``scan-free``, or
    ``fast-parity`` and ``scan-free-parity`` (those two with the family's options on parity);
    ``batch`` defaults to the study's."""
    model_config = yaml.safe_load(CONFIG.read_text())["model"]
    on_parity = scan.endswith("-parity")
    options = resolve(model_config["options"], arch, "parity" if on_parity else "")
    torch.manual_seed(0)
    spec = matched_spec(
        arch,
        "parity",
        None,
        d_model=model_config["d_model"],
        n_layers=model_config["n_layers"],
        options=options,
        target_params=model_config["target_params"],
    )
    model = build_model(
        spec, {"backend": "torch", "scan": "reference" if scan == "reference" else "fast"}
    ).train()
    if scan.startswith("scan-free"):  # after build_model, which points the scans at the backend's
        modeling_mamba.mamba_selective_scan = scan_free
        modeling_mamba2.mamba2_chunk_scan = scan_free_chunks
    if scan.startswith("scan-free") or scan == "unfused":  # the mixer's unfused path
        modeling_mamba2.mamba2_split_conv1d_scan_combined = mamba_scan.UNFUSED_MIXER
    training = yaml.safe_load(CONFIG.read_text())["training"]  # TrainConfig has no defaults
    batch = batch or training["batch_size"]
    names = {field.name for field in dataclasses.fields(TrainConfig)}
    config = TrainConfig(**{key: training[key] for key in names} | {"batch_size": batch})
    optimizer = make_optimizer(model, config, torch.device("cpu"))
    tokens = torch.randint(0, spec.vocab_size, (batch, length))
    labels = torch.randint(0, spec.num_classes, (batch, length))

    def step() -> None:  # what statelayers.training.train does per step, without the schedule
        with contextlib.ExitStack() as stack:
            if scan == "pytorch":
                for module in (mamba_scan, causal_conv):
                    stack.enter_context(mock.patch.object(module, "runs_cpu_kernels", lambda tensor: False))
            if scan == "ssd-steps":  # no length is short enough for the quadratic form
                stack.enter_context(mock.patch.object(mamba_scan, "QUADRATIC_MAX_LENGTH", 0))
            training_step(model, optimizer, tokens, labels, config, torch.device("cpu"))

    return step


def step_seconds(arch: str, scan: str, steps: int) -> float:
    """Mean seconds per step after one warm-up step (allocator, kernel selection)."""
    step = make_step(arch, scan)
    step()
    start = time.perf_counter()
    for _ in range(steps):
        step()
    return (time.perf_counter() - start) / steps


def time_rows(threads: int, steps: int, repeats: int) -> pd.DataFrame:
    torch.set_num_threads(threads)
    rounds: dict[str, list[float]] = {name: [] for name in ROWS}
    for round_ in range(repeats):
        for name, (arch, scan) in ROWS.items():
            if scan == "reference" and round_ > 0:
                continue
            rounds[name].append(step_seconds(arch, scan, 1 if scan == "reference" else steps))
    best = {name: min(seconds) for name, seconds in rounds.items()}
    return pd.DataFrame(
        {
            "model": list(best),
            "threads": threads,
            "ms_per_step": [seconds * 1e3 for seconds in best.values()],
            "ratio_to_lstm": [seconds / best["lstm"] for seconds in best.values()],
        }
    )


def ssd_milliseconds(length: int, threads: int, repeats: int, calls: int = 10) -> dict[str, float]:
    """Milliseconds per call of the two CPU forms of Mamba-2's SSD, forward alone and
    forward plus backward, at the study's sizes (batch 64, 16 heads of 32, state 64, one
    group); rounds interleaved, fastest kept."""
    torch.set_num_threads(threads)
    g = torch.Generator().manual_seed(0)
    batch, heads, head_dim, n_state = 64, 16, 32, 64
    inputs = dict(
        x=torch.randn(batch, length, heads, head_dim, generator=g),
        dt=torch.randn(batch, length, heads, generator=g),
        A=-torch.rand(heads, generator=g) * 15 - 1,
        B=torch.randn(batch, length, 1, n_state, generator=g),
        C=torch.randn(batch, length, 1, n_state, generator=g),
        D=torch.randn(heads, generator=g),
        dt_bias=torch.randn(heads, generator=g) - 3,
    )
    leaves = {k: v.clone().requires_grad_() for k, v in inputs.items()}
    grad = torch.randn(batch, length, heads, head_dim, generator=g)
    forms = {
        "quadratic": ssd_quadratic.mamba_chunk_scan_combined,
        "step-by-step": ssd.mamba_chunk_scan_combined,
    }

    def forward(scan, args):
        return scan(args["x"], args["dt"], args["A"], args["B"], args["C"], 20, D=args["D"],
                    dt_bias=args["dt_bias"], dt_softplus=True)  # fmt: skip

    def run(scan, backward):
        if backward:
            forward(scan, leaves).backward(grad)
        else:
            with torch.no_grad():
                forward(scan, inputs)

    best: dict[str, float] = {}
    for _ in range(repeats):
        for name, scan in forms.items():
            for backward in (False, True):
                run(scan, backward)
                start = time.perf_counter()
                for _ in range(calls):
                    run(scan, backward)
                key = f"{name}, {'forward + backward' if backward else 'forward'}"
                best[key] = min(best.get(key, float("inf")), (time.perf_counter() - start) / calls * 1e3)
    return best


BLOCK_KERNELS = (
    "causal_conv_forward",
    "quadratic_ssd_forward",
    "gated_rms_norm_forward",
    "gated_rms_norm_backward",
    "quadratic_ssd_backward",
    "causal_conv_backward",
)
"""The kernels :class:`~statelayers.models.kernels.mamba2_block.SplitConvScanNorm` calls, in order."""


def in_step_milliseconds(
    threads: int, steps: int, repeats: int, calls: int = 20, evict_mb: int = 512
) -> pd.DataFrame:
    """Milliseconds per call of each of :data:`BLOCK_KERNELS` in Mamba-2's training step
    (the family's options; mean over the step's layers and ``steps`` steps, best of
    ``repeats`` rounds), and alone on the arguments of its last call in the step: the same
    call ``calls`` times, each output freed before the next call (so its memory is reused),
    and again with every output kept alive, as a step keeps its activations for the
    backward pass; and alone with its inputs evicted from every cache, by writing
    ``evict_mb`` MB of other memory before each of ``calls // 4`` calls (best of ``repeats``)."""
    torch.set_num_threads(threads)
    seconds: dict[str, list[float]] = collections.defaultdict(list)
    last_call: dict[str, tuple] = {}

    def timed(name, kernel):
        def call(*args):
            start = time.perf_counter()
            result = kernel(*args)
            seconds[name].append(time.perf_counter() - start)
            last_call[name] = args
            return result

        return call

    in_step: dict[str, float] = {}
    with contextlib.ExitStack() as stack:
        for name in BLOCK_KERNELS:
            kernel = getattr(mamba2_block, name)
            stack.enter_context(mock.patch.object(mamba2_block, name, timed(name, kernel)))
        step = make_step("mamba2", "fast")
        step()
        for _ in range(repeats):
            seconds.clear()
            for _ in range(steps):
                step()
            for name, times in seconds.items():
                in_step[name] = min(in_step.get(name, float("inf")), sum(times) / len(times) * 1e3)
    other_memory = torch.zeros(evict_mb << 18)

    def per_call(name: str, count: int, evict: bool = False, keep: bool = False) -> float:
        """Mean ms of ``count`` lone calls of kernel ``name`` on its last arguments in the
        step, the eviction (if any) untimed."""
        kernel, total, outputs = getattr(mamba2_block, name), 0.0, []
        for _ in range(count):
            if evict:
                other_memory.add_(1.0)
            start = time.perf_counter()
            output = kernel(*last_call[name])
            total += time.perf_counter() - start
            outputs += [output] if keep else []
            del output  # freed now unless kept, so the next call can reuse its memory
        return total / count * 1e3

    rows = []
    for name in BLOCK_KERNELS:
        best = dict(alone=float("inf"), alone_outputs_kept=float("inf"), alone_inputs_evicted=float("inf"))
        for _ in range(repeats):  # interleaved rounds
            for column, value in (
                ("alone_inputs_evicted", per_call(name, calls // 4, evict=True)),
                ("alone", per_call(name, calls)),
                ("alone_outputs_kept", per_call(name, calls, keep=True)),
            ):
                best[column] = min(best[column], value)
        rows.append(dict(kernel=name, in_step=in_step[name], **best))
    return pd.DataFrame(rows)


def first_call_seconds() -> dict[str, float]:
    """Seconds of ``python -m statelayers.models.kernels`` (start-up with torch and numba, then
    one forward and backward of each kernel), with an empty numba cache and then with
    the cache that run left."""
    times = {}
    with tempfile.TemporaryDirectory() as cache:
        for state in ("cold cache", "warm cache"):
            start = time.perf_counter()
            subprocess.run(
                [sys.executable, "-m", "statelayers.models.kernels"],
                env={**os.environ, "NUMBA_CACHE_DIR": cache},
                check=True,
                capture_output=True,
            )
            times[state] = time.perf_counter() - start
    return times


def exp_nanoseconds(elements: int = 1 << 22, repeats: int = 20) -> dict[str, float]:
    """Nanoseconds per element of ``out = exp(dt * A)``, one thread, best of ``repeats``."""
    import math

    import numpy as np
    from numba import njit

    from statelayers.models.kernels.elementwise import FASTMATH, exp

    @njit(fastmath=FASTMATH)
    def vectorised(dt, A, out):
        for j in range(out.shape[0]):
            out[j] = exp(dt[j] * A[j])

    @njit(fastmath=FASTMATH)
    def libm(dt, A, out):
        for j in range(out.shape[0]):
            out[j] = math.exp(dt[j] * A[j])

    rng = np.random.default_rng(0)
    dt, A = rng.random(4096, np.float32) * 0.1, -rng.random(4096, np.float32) * 16
    out = np.empty_like(dt)
    times = {}
    for name, loop in (("statelayers exp", vectorised), ("math.exp (libm expf)", libm)):
        loop(dt, A, out)
        best = math.inf
        for _ in range(repeats):
            start = time.perf_counter()
            for _ in range(elements // len(out)):
                loop(dt, A, out)
            best = min(best, time.perf_counter() - start)
        times[name] = best / elements * 1e9
    return times


def profile(name: str, threads: int, steps: int) -> None:
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as torch_profile

    torch.set_num_threads(threads)
    step = make_step(*ROWS[name])
    step()
    with torch_profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(steps):
            step()
    print(f"{name}, {threads} threads, {steps} steps:")
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=15))


THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS")
"""What a Snakemake job of ``threads`` runs under: Snakemake exports the first two,
:func:`statelayers.runtime.start` the third before numba starts its pool. A process whose
numba pool started larger (numba's default: every core) runs work on a second core even
after ``numba.set_num_threads(1)``, torch's included (an LSTM step after a Mamba-2 step:
30 ms of wall time for 60 ms of CPU), so a one-thread row is only one thread in a process
started this way."""


def in_job_environment(threads: int) -> bool:
    return all(os.environ.get(name) == str(threads) for name in THREAD_VARIABLES)


def per_thread_count(args: argparse.Namespace) -> pd.DataFrame | None:
    """Run this benchmark again for each of ``args.threads`` in a child process started in
    that job environment; return the children's rows (``None`` for the printing modes)."""
    tables = []
    for threads in args.threads:
        child = [sys.executable, __file__, "--threads", str(threads), "--steps", str(args.steps)]
        child += ["--repeats", str(args.repeats)]
        child += ["--profile", args.profile] if args.profile else []
        child += ["--ssd", *map(str, args.ssd)] if args.ssd else []
        child += ["--in-step"] if args.in_step else []
        with tempfile.TemporaryDirectory() as scratch:
            rows = Path(scratch) / "rows.csv"
            child += [] if args.profile or args.ssd or args.in_step else ["--csv", str(rows)]
            environment = {**os.environ, **{name: str(threads) for name in THREAD_VARIABLES}}
            sys.stdout.flush()  # what this process printed comes before the child's output
            subprocess.run(child, env=environment, check=True)
            if rows.exists():
                tables.append(pd.read_csv(rows))
    return pd.concat(tables) if tables else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, nargs="+", default=[2])
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=3, help="interleaved rounds, fastest kept")
    parser.add_argument("--csv", type=Path, help="write model, threads, ms_per_step, ratio_to_lstm")
    parser.add_argument("--compile", action="store_true", help="time the kernels' first call, cold and warm")
    parser.add_argument("--profile", choices=ROWS, help="torch.profiler's top operations of one row")
    parser.add_argument("--exp", action="store_true", help="time the vectorised exp against libm's")
    parser.add_argument(
        "--ssd", type=int, nargs="*", help="time Mamba-2's two SSD forms alone at these lengths"
    )
    parser.add_argument(
        "--in-step", action="store_true", help="time Mamba-2's block kernels in the step and alone"
    )
    args = parser.parse_args()
    if args.exp:
        for name, ns in exp_nanoseconds().items():
            print(f"exp(dt * A), {name}: {ns:.3f} ns per element")
    if args.compile:
        for state, seconds in first_call_seconds().items():
            print(f"python -m statelayers.models.kernels, {state}: {seconds:.2f} s")
    if not (len(args.threads) == 1 and in_job_environment(args.threads[0])):
        table = per_thread_count(args)
        if table is not None and args.csv:
            table.to_csv(args.csv, index=False, float_format="%.4g")
        return
    runtime.keep_freed_memory()
    if args.ssd:
        for length in args.ssd:
            for threads in args.threads:
                for name, ms in ssd_milliseconds(length, threads, args.repeats).items():
                    print(f"SSD, length {length}, {threads} threads, {name:34s} {ms:8.2f} ms")
        return
    if args.profile:
        for threads in args.threads:
            profile(args.profile, threads, args.steps)
        return
    if args.in_step:
        for threads in args.threads:
            table = in_step_milliseconds(threads, args.steps, args.repeats)
            print(f"Mamba-2's block kernels, ms per call, {threads} threads, best of {args.repeats}")
            print(table.to_string(index=False, float_format="%.2f"))
        return
    table = pd.concat([time_rows(threads, args.steps, args.repeats) for threads in args.threads])
    for threads, rows in table.groupby("threads", sort=False):
        print(
            f"{'training step':32s} {'ms':>8s} {'x lstm':>8s}   ({threads} threads, best of {args.repeats})"
        )
        for row in rows.itertuples():
            print(f"{row.model:32s} {row.ms_per_step:8.1f} {row.ratio_to_lstm:8.2f}")
    if args.csv:
        table.to_csv(args.csv, index=False, float_format="%.4g")


if __name__ == "__main__":
    main()
