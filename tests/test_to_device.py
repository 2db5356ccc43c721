"""``training.to_device`` (issue 38): only host memory is pinned on its way to a GPU.

``pin_memory()`` raises on a tensor that is not in CPU memory, and a batch may already be
on the GPU (benchmarks/gpu_step.py built its batches there, and every row failed). No
GPU is needed: ``pin_memory`` and ``to`` are replaced by recorders, and a meta-device
tensor stands for one that is not in CPU memory.
"""

from __future__ import annotations

import pytest
import torch

from statelayers.training import to_device

CUDA = torch.device("cuda")


@pytest.fixture
def recorded(monkeypatch):
    """Every ``pin_memory`` and ``to`` call on a tensor; ``pin_memory`` raises off the CPU,
    as torch's does."""
    calls = {"pinned": [], "moved": []}

    def pin_memory(self, *args, **kwargs):
        if self.device.type != "cpu":
            raise RuntimeError(
                f"cannot pin '{self.device.type}' memory: only dense CPU tensors can be pinned"
            )
        calls["pinned"].append(self)
        return self

    def to(self, *args, **kwargs):
        calls["moved"].append((self, args, kwargs))
        return self

    monkeypatch.setattr(torch.Tensor, "pin_memory", pin_memory)
    monkeypatch.setattr(torch.Tensor, "to", to)
    return calls


def test_a_tensor_that_is_not_in_host_memory_is_moved_without_pinning(recorded):
    on_device = torch.empty(2, 3, device="meta")  # not CPU memory, like a batch already on the GPU
    assert to_device(on_device, CUDA) is on_device
    assert recorded["pinned"] == []
    [(tensor, args, _)] = recorded["moved"]
    assert tensor is on_device and args == (CUDA,)


def test_a_host_tensor_goes_to_the_gpu_through_pinned_memory_without_waiting(recorded):
    host = torch.zeros(2, 3, dtype=torch.long)
    to_device(host, CUDA)
    [pinned] = recorded["pinned"]
    [(tensor, args, kwargs)] = recorded["moved"]
    assert pinned is host and tensor is host
    assert args == (CUDA,) and kwargs == {"non_blocking": True}


@pytest.mark.parametrize("device", ["cpu", "meta"])
def test_a_tensor_already_on_the_target_device_is_returned_as_it_is(device):
    tensor = torch.arange(6, device=device).reshape(2, 3)
    assert to_device(tensor, torch.device(device)) is tensor


def test_a_host_tensor_stays_on_the_host_unpinned(recorded):
    host = torch.arange(6).reshape(2, 3)
    to_device(host, torch.device("cpu"))
    assert recorded["pinned"] == []
    [(tensor, args, _)] = recorded["moved"]
    assert tensor is host and args == (torch.device("cpu"),)
