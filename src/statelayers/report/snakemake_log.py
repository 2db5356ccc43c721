"""What a Snakemake log says about its run: README.md and docs/results.md name a run by its jobs
and wall time."""

from __future__ import annotations

import re


def complete_run(log_text: str) -> tuple[int, str] | None:
    """(jobs, elapsed time) of a Snakemake log that ran to completion, else ``None``."""
    done = re.findall(r"^(\d+) of \1 steps \(100%\) done$", log_text, re.M)
    elapsed = re.search(r"^Elapsed time: (\d+:\d\d:\d\d)", log_text, re.M)
    return (int(done[-1]), elapsed.group(1)) if done and elapsed else None
