"""The pool of GPU slots that spreads a local run's model jobs over the host's GPUs
(statelayers.devices), on stand-in GPU ids: the locks are files, no GPU is needed."""

from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from statelayers import devices

GPUS = ["a", "b", "c"]
FORK = multiprocessing.get_context("fork")


def holding_a_slot(pool: Path, start, taken, release) -> None:
    """Take a slot once every process is ready, report its lock file, hold it until released."""
    start.wait(timeout=60)
    devices.take_slot(GPUS, pool)
    taken.put(Path(devices._held[-1].name).name)
    release.wait(timeout=60)


def test_jobs_taking_slots_at_the_same_time_never_share_one_and_spread_over_the_gpus(tmp_path):
    """Twice as many processes as GPUs, all asking at once: each holds a slot of its own,
    and they fill the GPUs level by level, two jobs on each."""
    jobs = 2 * len(GPUS)
    start, taken, release = FORK.Barrier(jobs), FORK.Queue(), FORK.Event()
    arguments = (tmp_path, start, taken, release)
    processes = [FORK.Process(target=holding_a_slot, args=arguments) for _ in range(jobs)]
    for process in processes:
        process.start()
    try:
        slots = sorted(taken.get(timeout=60) for _ in range(jobs))
    finally:
        release.set()
        for process in processes:
            process.join(timeout=60)
    assert slots == sorted(f"gpu{gpu}-slot{level}.lock" for gpu in GPUS for level in (0, 1))
    assert all(process.exitcode == 0 for process in processes)


def test_a_slot_comes_free_when_the_process_holding_it_is_killed(tmp_path):
    start, taken, release = FORK.Barrier(1), FORK.Queue(), FORK.Event()
    holder = FORK.Process(target=holding_a_slot, args=(tmp_path, start, taken, release))
    holder.start()
    assert taken.get(timeout=60) == "gpua-slot0.lock"
    os.kill(holder.pid, signal.SIGKILL)
    holder.join(timeout=60)
    start, taken, release = FORK.Barrier(1), FORK.Queue(), FORK.Event()  # none the killed one waited on
    release.set()  # the successor lets its slot go at once
    successor = FORK.Process(target=holding_a_slot, args=(tmp_path, start, taken, release))
    successor.start()
    assert taken.get(timeout=60) == "gpua-slot0.lock"
    successor.join(timeout=60)


def test_a_gpu_is_chosen_only_where_none_is_set_and_the_host_has_several(tmp_path):
    pool = tmp_path / "pool"
    environ = {devices.VISIBLE: "3"}  # as Slurm sets it
    assert devices.choose_gpu(environ, GPUS, pool) is None and environ == {devices.VISIBLE: "3"}
    environ = {}
    assert devices.choose_gpu(environ, ["0"], pool) is None and environ == {}
    assert not pool.exists()
    assert devices.choose_gpu(environ, ["0", "1"], pool) == "0" and environ == {devices.VISIBLE: "0"}
    assert (pool / "gpu0-slot0.lock").is_file()


JOB = """import os, types
snakemake = types.SimpleNamespace(resources=types.SimpleNamespace(gpu={gpu}))  # as in a script: job
from statelayers import runtime
runtime.start()
print(os.environ.get("CUDA_VISIBLE_DEVICES"))
"""


@pytest.mark.parametrize(
    "gpu, preset, visible",
    [(1, None, "0"), (0, None, "None"), (1, "7", "7")],
    ids=["gpu-job", "cpu-job", "slurm"],
)
def test_a_snakemake_job_taking_the_gpu_resource_gets_a_gpu_at_start(tmp_path, gpu, preset, visible):
    """A job's script on a host whose stand-in nvidia-smi lists two GPUs: a GPU job takes one,
    a CPU job none, and a job Slurm gave a GPU keeps it."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "nvidia-smi").write_text("#!/bin/sh\necho 0\necho 1\n")
    (bin_dir / "nvidia-smi").chmod(0o755)
    env = {key: value for key, value in os.environ.items() if key != devices.VISIBLE}
    env["PATH"] = f"{bin_dir}{os.pathsep}{env['PATH']}"
    if preset:
        env[devices.VISIBLE] = preset
    result = subprocess.run(
        [sys.executable, "-c", JOB.format(gpu=gpu)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [visible]
    assert (tmp_path / devices.POOL / "gpu0-slot0.lock").is_file() is (visible == "0")
