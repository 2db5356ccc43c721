"""What a workflow job shows on the console, and what it keeps in its log.

Snakemake runs several jobs at once, each writing to the same terminal. Their log lines
and progress bars interleave there and drown Snakemake's own progress, so a job keeps
its log lines and its progress bars in its log file (Snakemake's ``log:``), shows only
warnings and errors on the console, and announces what a person waits for in one line
(:func:`announce`: a finished training run). Outside a job (a test, a session at the
prompt) a progress bar shows on a terminal and nowhere else.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Mapping
from typing import TextIO

from statelayers import runtime

log = logging.getLogger(__name__)


def start_job(log_path: str, threads: int | None = None) -> logging.Logger:
    """:func:`statelayers.runtime.start` for a workflow job, its console kept to warnings
    and errors: its log lines go to ``log_path`` only. Returns runtime's logger."""
    started = runtime.start(log_path, threads)
    for handler in logging.getLogger().handlers:
        if not isinstance(handler, logging.FileHandler) and getattr(handler, "stream", None) is sys.stderr:
            handler.setLevel(logging.WARNING)
    return started


def announce(message: str) -> None:
    """One line on the console (and in the job's log): the news of a job a person waits for."""
    log.info(message)
    print(message, file=sys.stderr, flush=True)


def training_line(run: str, meta: Mapping) -> str:
    """The console line of a finished training ``run`` (its pair and seed in words) from its
    ``model.json``: steps, the last validation check, the criterion, the seconds."""
    return (
        f"trained {run}: {meta['steps']} of {meta['training']['max_steps']} steps, validation token "
        f"accuracy {meta['validation_token_accuracy']:.3f} (criterion "
        f"{'reached' if meta['reached'] else 'not reached'}), {meta['train_seconds']:.0f} s"
    )


class _LogLines:
    """A file for tqdm that turns each refresh of a bar into a line of the job's log."""

    def write(self, text: str) -> None:
        line = text.strip("\r\n ")
        if line:
            log.info(line)

    def flush(self) -> None:
        """Nothing to flush: every line went to the log as it came."""


def progress_file() -> TextIO | _LogLines | None:
    """Where a progress bar goes: the job's log in a workflow job (a log file is set up),
    else the terminal if stderr is one, else nowhere (``None``: no bar)."""
    if any(isinstance(handler, logging.FileHandler) for handler in logging.getLogger().handlers):
        return _LogLines()
    return sys.stderr if sys.stderr.isatty() else None
