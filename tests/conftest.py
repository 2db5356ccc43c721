import os

import pytest

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


@pytest.fixture(autouse=True)
def _few_threads():
    import torch

    torch.set_num_threads(1)
    torch.manual_seed(0)
