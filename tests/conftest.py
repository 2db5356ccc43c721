import os

import pytest

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def pytest_collection_modifyitems(items):
    """End-to-end workflow tests first. pyproject's ``--dist loadfile --no-loadscope-reorder``
    sends each file whole to the next free worker in collection order, so the files that run
    Snakemake (minutes each; test_workflow.py's shared study the longest) start at once and
    the short unit-test files fill in behind them on whichever worker is free."""
    items.sort(key=lambda item: item.get_closest_marker("workflow") is None)


@pytest.fixture(autouse=True)
def _few_threads():
    import torch

    torch.set_num_threads(1)
    torch.manual_seed(0)


CUDA_SKIP = "needs-cuda:"
"""How the reason of every skip for want of a CUDA GPU or the kernels begins. On the GPU
machine tools/gpu_check.sh fails its tests step on a skip whose reason begins so, and on
no other: a skip that merely mentions CUDA (a CPU package missing there) is not one."""


def needs_cuda(
    available: bool, what: str = "a CUDA GPU and mamba-ssm + causal-conv1d"
) -> pytest.MarkDecorator:
    """Skip the test unless ``available``, saying it needs ``what`` behind :data:`CUDA_SKIP`."""
    return pytest.mark.skipif(not available, reason=f"{CUDA_SKIP} needs {what}")
