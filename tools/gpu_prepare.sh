#!/usr/bin/env bash
# Fill .gpu/sources (git-ignored) for tools/gpu_check.sh, on a machine with pip and a
# package index; the GPU machine has neither. Copies the upstream source tarballs of
# causal-conv1d and mamba-ssm from DIR, after checking that they take the build's patches
# (sm_90 only, the dominating kernel files split), and downloads the einops wheel that
# mamba-ssm imports. Copy the repository with .gpu/sources to the GPU machine afterwards.
#
# Usage: tools/gpu_prepare.sh DIR   (DIR: a directory holding the upstream source tarballs)
set -euo pipefail
[[ $# -eq 1 ]] || { echo "usage: $0 DIR_WITH_THE_UPSTREAM_TARBALLS" >&2; exit 2; }
DIR=$(cd "$1" && pwd)
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
EINOPS=einops==0.8.2  # pure Python; mamba-ssm 2.3.2 imports it at its package root

"$PYTHON" tools/gpu_sources.py prepare "$DIR" .gpu/sources
"$PYTHON" -m pip download --quiet --no-deps --only-binary :all: --dest .gpu/sources "$EINOPS"
ls -l .gpu/sources
