"""The stopping rule of a training run, importable without torch (the cost tools price it)."""

from __future__ import annotations

CONSECUTIVE_CHECKS = 2
"""Validation checks in a row that must reach ``target_accuracy`` to stop a run: one
lucky check on a small validation set does not end training."""


def reached_target(checks: list[float], target: float) -> bool:
    """Whether the last :data:`CONSECUTIVE_CHECKS` validation accuracies all reach ``target``."""
    return len(checks) >= CONSECUTIVE_CHECKS and min(checks[-CONSECUTIVE_CHECKS:]) >= target
