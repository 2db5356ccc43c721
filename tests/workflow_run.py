"""Running the workflow in a temporary copy of it: what every workflow test file shares."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
SNAKEMAKE = [sys.executable, "-m", "snakemake"]


def copy_workflow(dest: Path) -> Path:
    for name in ("Snakefile", "workflow", "config", "profiles", "envs"):
        source = REPO / name
        (shutil.copytree if source.is_dir() else shutil.copy)(source, dest / name)
    return dest


def snakemake(
    workdir: Path, *args: str, check: bool = True, env: dict | None = None
) -> subprocess.CompletedProcess:
    result = subprocess.run(
        [*SNAKEMAKE, "--cores", "2", *args],
        cwd=workdir,
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
    )
    if check and result.returncode != 0:
        raise AssertionError(f"snakemake {args} failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}")
    return result


def planned_jobs(workdir: Path, *configfiles: Path) -> list[tuple[str, dict]]:
    """(rule, wildcards) of every job a dry run would execute."""
    return listed_jobs(
        snakemake(workdir, "-n", "--configfile", "config/test.yaml", *map(str, configfiles)).stdout
    )


def listed_jobs(out: str) -> list[tuple[str, dict]]:
    """(rule, wildcards) of the jobs in Snakemake's output or log, in the order listed."""
    jobs = []
    # A job is its rule line and the indented lines under it (the log has no blank lines between jobs).
    for job in re.finditer(r"^(?:local)?rule (\w+):\n((?:[ \t]+.*\n?)*)", out, re.M):
        found = re.search(r"^\s+wildcards: (.*)$", job.group(2), re.M)
        wildcards = dict(kv.split("=", 1) for kv in found.group(1).split(", ")) if found else {}
        jobs.append((job.group(1), wildcards))
    return jobs


def overlay(workdir: Path, name: str, values: dict) -> Path:
    path = workdir / name
    path.write_text(yaml.safe_dump(values))
    return path


def small_study(root: Path, name: str, **changes) -> Path:
    """An overlay on config/test.yaml: one task, GRU and Mamba only, plus ``changes``."""
    return overlay(root, name, {"architectures": ["gru", "mamba"], "tasks": ["dyck"], **changes})
