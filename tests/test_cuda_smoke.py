"""One short pass over every GPU path of the workflow, on CUDA (issue 38): skipped without it.

tests/test_backends.py compares the backends at toy sizes; nothing else ran on a GPU.
Here, at small scale (2 layers, short runs) but with the study's dimensions
(config/config.yaml: d_model 128; Mamba-2 with chunk 20, head_dim 32, state 64 at its
matched ``expand``; Mamba with its matched inner width):

- :func:`statelayers.training.train` on CUDA, the way the jobs run it: fused AdamW,
  bf16 autocast, micro-batches, validation checks, and a resume round-trip (saved at
  every step, then a fresh model resumed from the last save);
- a training step whose batch is already on the GPU (what benchmarks/gpu_step.py did);
- Mamba-2 at the study's dimensions under the ``cuda`` and ``torch`` backends, eval and
  train mode, forward and backward;
- an erasure (:func:`statelayers.measure.erasures.edited_predictions`) and activation
  patching (:func:`statelayers.measure.patching.patching_rows`) on the GPU, against the
  same model on the CPU.

On a GPU, resuming is not bit-exact (:data:`statelayers.runtime.KERNEL_ENVIRONMENT`): the
resumed weights must equal the uninterrupted run's to float rounding, far below one
step's change. Comparisons across backends and devices are norm-relative (1e-2): the
Triton kernels multiply in TF32, and a layout or indexing error is off by order 1.
tools/gpu_check.sh runs this file; it needs no network and nothing the GPU machine lacks.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml
from conftest import needs_cuda

from statelayers.models.backends import kernels_importable, use_backend

CUDA = torch.cuda.is_available()
KERNELS = CUDA and kernels_importable()
needs_gpu = needs_cuda(CUDA, "a CUDA GPU")
needs_kernels = needs_cuda(KERNELS)

CONFIG = Path(__file__).resolve().parents[1] / "config" / "config.yaml"
TASK, LENGTH = "parity", 40  # the study's train_length
LAYERS = 2
TOLERANCE = 1e-2


@pytest.fixture(autouse=True)
def _torch_backend_afterwards():
    yield
    use_backend("torch")  # the backend is process-wide: leave the other test files theirs


def study_model(arch: str, device: str, backend: str = "auto"):
    """``arch`` at the study's d_model, options and matched width, with :data:`LAYERS` layers."""
    from statelayers.models.registry import base_arch
    from statelayers.models.tagger import build_model, matched_spec

    model_config = yaml.safe_load(CONFIG.read_text())["model"]
    options = model_config["options"].get(base_arch(arch), {})
    spec = matched_spec(
        arch,
        TASK,
        {},
        model_config["d_model"],
        model_config["n_layers"],
        options,
        model_config["target_params"],
    )
    torch.manual_seed(0)
    model = build_model(dataclasses.replace(spec, n_layers=LAYERS), {"backend": backend}, device=device)
    return model.to(device)


def sequences(n: int, seed: int = 0) -> dict[str, np.ndarray]:
    from statelayers.tasks.formal import generate

    return generate(TASK, n, LENGTH, np.random.default_rng(seed), {})


def train_config(**changes):
    """Six steps of micro-batches under bf16 autocast, validation checks at steps 3 and 6."""
    from statelayers.training import TrainConfig

    settings = {
        "max_steps": 6,
        "target_accuracy": 1.0,  # not reached in six steps: every run takes all six
        "batch_size": 16,
        "lr": 1e-3,
        "weight_decay": 0.01,
        "warmup_fraction": 0.0,
        "decay_fraction": 0.2,
        "grad_clip": 1.0,
        "eval_every": 3,
        "log_every": 3,
        "grad_accumulation": 2,
        "precision": "bf16",
        "curriculum": None,
    }
    return TrainConfig(**(settings | changes))


def relative_error(actual: torch.Tensor, expected: torch.Tensor) -> float:
    expected = expected.detach().double().cpu()
    return float((actual.detach().double().cpu() - expected).norm() / expected.norm().clamp_min(1e-12))


@needs_gpu
@pytest.mark.parametrize("arch", ["mamba2", "mamba", "transformer", "lstm"])
def test_training_on_cuda_validates_and_resumes_under_bf16_with_fused_adamw(arch, tmp_path):
    from statelayers.tasks.data import TrainingStream
    from statelayers.training import ResumeFile, train

    device = torch.device("cuda")
    validation = sequences(64, seed=1)
    config = train_config()
    resume = ResumeFile(tmp_path / "resume.pt", "smoke", every_seconds=0.0)  # a save after every step

    def run():
        model = study_model(arch, "cuda")
        stream = TrainingStream(TASK, LENGTH, np.random.default_rng(2))
        outcome = train(
            model, stream, (validation["tokens"], validation["labels"]), config, 0, device, resume
        )
        return model, stream, outcome

    model, stream, outcome = run()
    assert model.backend == (("cuda" if KERNELS else "torch") if arch.startswith("mamba") else None)
    assert outcome.steps == 6 and not outcome.reached
    checks = [row for row in outcome.history if "validation_token_accuracy" in row]
    assert [row["step"] for row in checks] == [3, 6]
    assert all(0 <= row["validation_token_accuracy"] <= 1 and np.isfinite(row["loss"]) for row in checks)
    assert all(p.device.type == "cuda" and p.isfinite().all() for p in model.parameters())
    saved = torch.load(resume.path, map_location="cpu", weights_only=True)
    assert 1 <= saved["step"] < 6 and all(group["fused"] for group in saved["optimizer"]["param_groups"])

    resumed, resumed_stream, resumed_outcome = run()  # a fresh model, resumed from the last save
    assert resumed_outcome.steps == 6
    assert resumed_stream.state == stream.state  # the same batches were drawn
    kept = [row for row in outcome.history if row["step"] <= saved["step"]]
    assert resumed_outcome.history[: len(kept)] == kept  # the saved rows, as they were
    assert len(resumed_outcome.history) == len(outcome.history)
    for row, resumed_row in zip(outcome.history[len(kept) :], resumed_outcome.history[len(kept) :]):
        assert resumed_row["step"] == row["step"]
        assert resumed_row["loss"] == pytest.approx(row["loss"], rel=1e-3)
    for (name, weight), resumed_weight in zip(model.named_parameters(), resumed.parameters()):
        torch.testing.assert_close(resumed_weight, weight, rtol=0, atol=1e-4, msg=name)  # a step moves 1e-3


@needs_gpu
def test_a_training_step_takes_a_batch_already_on_the_gpu():
    from statelayers.training import make_optimizer, training_step

    device = torch.device("cuda")
    model = study_model("gru", "cuda").train()
    config = train_config(batch_size=8, grad_accumulation=1, precision="fp32")
    tokens = torch.randint(0, 2, (8, LENGTH), device=device)
    loss, accuracy = training_step(
        model, make_optimizer(model, config, device), tokens, tokens, config, device
    )
    assert loss.device.type == "cuda" and loss.isfinite() and 0 <= accuracy.item() <= 1


def forward_backward(model, tokens: torch.Tensor, backend: str) -> list[torch.Tensor]:
    """Logits, every layer's state, the loss and every gradient under ``backend``."""
    use_backend(backend, device="cuda")
    model.zero_grad()
    logits, states = model(tokens, return_states=True)
    loss = logits.float().logsumexp(-1).mean()
    loss.backward()
    return [logits, *states, loss, *(p.grad.clone() for p in model.parameters() if p.grad is not None)]


@needs_kernels
@pytest.mark.parametrize("mode", ["eval", "train"])
@pytest.mark.parametrize("arch", ["mamba2", "mamba2_noconv", "mamba"])
def test_both_backends_agree_at_the_studys_dimensions(arch, mode):
    model = getattr(study_model(arch, "cuda", backend="cuda"), mode)()
    tokens = torch.as_tensor(sequences(16)["tokens"], device="cuda")
    reference, kernels = forward_backward(model, tokens, "torch"), forward_backward(model, tokens, "cuda")
    assert len(reference) == len(kernels)
    errors = [relative_error(ours, theirs) for ours, theirs in zip(kernels, reference)]
    assert max(errors) <= TOLERANCE, errors


def on_cpu(model):
    """``model`` moved to the CPU, Mamba under the torch backend there."""
    use_backend("torch")
    return model.cpu()


@needs_gpu
@pytest.mark.parametrize("arch", ["mamba2", "transformer"])
def test_an_erasure_on_the_gpu_scores_as_on_the_cpu(arch):
    from statelayers.measure.erasures import edited_predictions, projection, random_subspace
    from statelayers.models.inference import predict, scores

    model = study_model(arch, "cuda").eval()
    data = sequences(32, seed=3)
    erasure = projection("random", random_subspace(model.spec.d_model, 8, np.random.default_rng(0)))
    layer = LAYERS  # the last block: every block before it is replayed from the clean states
    results = {}
    for device in ("cuda", "cpu"):
        if device == "cpu":
            model = on_cpu(model)
        _, clean = predict(model, data["tokens"], keep_states=len(data["tokens"]))
        x = torch.as_tensor(data["tokens"], device=device)
        with torch.no_grad():
            edited = model(x, edits={layer: erasure})
        results[device] = (scores(edited_predictions(model, data, clean, layer, erasure), data["labels"])[0], edited)
    assert abs(results["cuda"][0] - results["cpu"][0]) <= 0.05
    assert relative_error(results["cuda"][1], results["cpu"][1]) <= TOLERANCE


@needs_gpu
@pytest.mark.parametrize("arch", ["mamba2", "transformer"])
def test_patching_on_the_gpu_measures_what_it_measures_on_the_cpu(arch):
    from statelayers.measure.patching import corrupted_pairs, patching_rows

    model = study_model(arch, "cuda").eval()
    data = sequences(16, seed=4)
    pairs = corrupted_pairs(TASK, data["tokens"], data["labels"], {}, 4, 30, np.random.default_rng(0))
    on_gpu = patching_rows(model, pairs)
    reference = patching_rows(on_cpu(model), pairs)
    assert [(r["layer"], r["position"], r["direction"]) for r in on_gpu] == [
        (r["layer"], r["position"], r["direction"]) for r in reference
    ]
    columns = ("mean_patched_metric", "clean_metric", "corrupted_metric")
    gpu, cpu = (torch.tensor([[r[c] for c in columns] for r in rows]) for rows in (on_gpu, reference))
    assert relative_error(gpu, cpu) <= TOLERANCE
