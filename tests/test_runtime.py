"""A job's process set-up: glibc keeps freed memory in its heap, so a training step's
tensors of a few MB reuse pages instead of faulting in fresh ones every step; at exit the
interpreter does not walk every object once more, and the job's log is still complete."""

import statistics
import subprocess
import sys

import pytest

REFAULTS = """
import resource, sys, torch
from statelayers import runtime
if sys.argv[1] == "start":
    runtime.start()
def faults():
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt
def step():  # as a training step does: 24 tensors of 4 MiB alive at once, then all freed
    tensors = [torch.ones(1 << 20) for _ in range(24)]
    return sum(t[0] for t in tensors)
step()  # warm up: the allocator's thresholds, torch's first calls
for _ in range(11):
    before = faults()
    step()
    print(faults() - before)
"""


def page_faults(setup: str) -> int:
    """Page faults of a typical step: the median of 11, so that a step in which the heap
    still grows, or glibc's dynamic threshold happens to keep a block, does not decide."""
    result = subprocess.run(
        [sys.executable, "-c", REFAULTS, setup], capture_output=True, text=True, check=True
    )
    return int(statistics.median(int(count) for count in result.stdout.split()))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's allocator")
def test_a_started_job_reuses_freed_memory_instead_of_faulting_in_fresh_pages():
    from statelayers.runtime import keep_freed_memory

    if not keep_freed_memory():
        pytest.skip("not glibc")
    fresh, reused = page_faults("none"), page_faults("start")
    if fresh < 24 * 1024 / 2:  # 1024 pages of 4 KiB per tensor, most mapped afresh every step
        pytest.skip(f"{fresh} page faults: this kernel maps fresh memory in huge pages")
    assert reused < fresh / 20


EXIT = """
import os, sys
from statelayers import runtime
if sys.argv[1] == "start":
    runtime.start(sys.argv[2])
class Cycle:
    def __del__(self):
        os.write(1, b"collected")
cycle = Cycle()
cycle.self = cycle
del cycle  # garbage only the collector finds: the collection at exit finalises it
import logging
logging.getLogger("statelayers").info("last line")
"""


def test_a_started_job_skips_the_collection_at_exit_and_still_flushes_its_log(tmp_path):
    def run(setup: str) -> str:
        log = tmp_path / f"{setup}.log"
        command = [sys.executable, "-c", EXIT, setup, str(log)]
        return subprocess.run(command, capture_output=True, text=True, check=True).stdout

    assert run("none") == "collected"
    assert run("start") == ""
    assert (tmp_path / "start.log").read_text().rstrip().endswith("last line")
