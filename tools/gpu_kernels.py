"""Whether the CUDA kernels really load: the compiled modules, their packages, and what
transformers' Mamba and Mamba-2 kernel functions resolved to.

transformers binds each kernel function when its modelling module is imported and falls
back to PyTorch, silently, on any import error; mamba-ssm's package root imports the
compiled ``selective_scan_cuda`` and einops unconditionally. So this imports each piece
itself first, printing the error transformers would swallow, then names the package
behind every kernel function, and what :func:`statelayers.models.backends.kernels_importable`
(which the ``auto`` and ``cuda`` backends go by) makes of it. Exit status 0 when all of
them are kernels, 3 when not (1 stays Python's, for a crash).

Usage (tools/gpu_check.sh sets the path): PYTHONPATH=src:BUILT_PACKAGE_DIRS python3 tools/gpu_kernels.py
"""

from __future__ import annotations

import importlib
import sys

import torch  # first: the compiled modules link against its libraries

from statelayers.runtime import kernel_environment

kernel_environment()  # as every job has it, before mamba-ssm is imported below

MODULES = ("causal_conv1d_cuda", "selective_scan_cuda", "causal_conv1d", "mamba_ssm")
NOT_ALL_KERNELS = 3


def import_report(name: str) -> tuple[bool, str]:
    """Whether ``name`` imports, and where from or why not."""
    try:
        module = importlib.import_module(name)
    except Exception as error:  # a broken build fails with OSError or ImportError alike
        return False, f"{type(error).__name__}: {error}"
    return True, str(getattr(module, "__file__", module))


def main() -> int:
    print(f"torch {torch.__version__}, CUDA {torch.version.cuda}, GPU: {torch.cuda.is_available()}")
    imported = True
    for name in MODULES:
        ok, detail = import_report(name)
        imported &= ok
        print(f"{'ok' if ok else 'FAILED':6s} import {name}: {detail}")
    # Before any use_backend call, the modules' globals are what transformers resolved.
    from statelayers.models.backends import KERNEL_FUNCTIONS, implementation, kernels_importable

    for module_name, names in KERNEL_FUNCTIONS.items():
        module = importlib.import_module(module_name)
        for name in names:
            print(f"{module_name.rsplit('.', 1)[-1]}.{name}: {implementation(getattr(module, name))}")
    kernels = kernels_importable()  # what the backends decide by
    print(f"transformers bound the kernels: {kernels}")
    return 0 if imported and kernels else NOT_ALL_KERNELS


if __name__ == "__main__":
    sys.exit(main())
