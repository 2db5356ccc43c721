#!/usr/bin/env bash
# GPU checks of the Mamba backends (issue 5), for a machine with an NVIDIA GPU:
# installs the CUDA kernels (mamba-ssm, causal-conv1d) into .venv and runs every test
# that compares the PyTorch and CUDA backends or needs a GPU; the rest of the suite is
# the CPU one. Usage: tools/gpu_check.sh   (from the repository root; needs nvcc or
# prebuilt wheels of the two packages reachable by pip).
set -euo pipefail
nvidia-smi --query-gpu=name,memory.total --format=csv
make env
.venv/bin/pip install --no-build-isolation -e ".[gpu]"
.venv/bin/python - <<'PY'
import torch
from statelayers.backends import kernels_importable
print("torch", torch.__version__, "cuda", torch.version.cuda, "gpu", torch.cuda.get_device_name(0))
assert kernels_importable(), "mamba-ssm / causal-conv1d did not import"
PY
.venv/bin/python -m pytest -rs -q tests/test_backends.py tests/test_conv1d.py tests/test_mamba_scan.py
