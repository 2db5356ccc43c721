"""Which runs a reading may use: the runs that learned their task (test token accuracy at
the training length at least the gate, ``claims.learned_accuracy``), whose label probes
converged, and what the learnability tables say an untested pair needs."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from statelayers.report.claims.engine import MIN_SEEDS
from statelayers.report.learnability import STEPS_TO_95_ACCURACY
MIN_LEARNED_SEEDS = MIN_SEEDS
"""Learned seeds an architecture needs on a task for a sub-claim about it."""


def learned_runs(behaviour: pd.DataFrame, train_length: int, threshold: float | None) -> pd.DataFrame:
    """arch, task, seed, accuracy (test token accuracy at ``train_length``) and ``learned``
    (accuracy >= ``threshold``; every run where ``threshold`` is None, the paper's
    reading), one row per run of ``behaviour.csv``."""
    at_train = behaviour[behaviour["eval_length"] == train_length]
    if at_train.empty:
        raise ValueError(f"behaviour has no rows at the training length {train_length}")
    runs = at_train.groupby(["arch", "task", "seed"], as_index=False)["token_accuracy"].mean()
    runs = runs.rename(columns={"token_accuracy": "accuracy"})
    return runs.assign(learned=True if threshold is None else runs["accuracy"] >= threshold)


def unconverged_probes(probes: pd.DataFrame) -> pd.DataFrame:
    """arch, task, seed and ``unconverged``: how many of the run's fitted probes (every
    layer and target, at the fit length) stopped at ``max_iter``, and
    ``labels_converged``: whether every probe of the training label did not (the profile
    findings read those). A table without a ``converged`` column counts none."""
    fitted = probes[probes["split"] == "probe"]
    converged = fitted["converged"].astype(bool) if "converged" in fitted else pd.Series(True, fitted.index)
    frame = fitted[["arch", "task", "seed", "target"]].assign(
        unconverged=~converged, label_unconverged=~converged & (fitted["target"] == "labels")
    )
    counts = frame.groupby(["arch", "task", "seed"], as_index=False)[
        ["unconverged", "label_unconverged"]
    ].sum()
    return counts.assign(labels_converged=counts.pop("label_unconverged") == 0)


@dataclass
class Learned:
    """Which runs a reading may use (:func:`learned_runs`, and for the profile findings
    whether their label probes converged), to filter tables and gate sub-claims."""

    runs: pd.DataFrame
    """arch, task, seed, accuracy, learned, and optionally labels_converged."""
    learnability: pd.DataFrame | None = None
    """``benchmarks/learnability*.csv`` rows: the steps a pair that did not learn needs."""

    @property
    def _usable(self) -> pd.Series:
        converged = self.runs["labels_converged"] if "labels_converged" in self.runs else True
        return self.runs["learned"] & converged

    def keep(self, frame: pd.DataFrame) -> pd.DataFrame:
        """The rows of ``frame`` (keyed by arch, task, seed) that belong to usable runs."""
        usable = self.runs.loc[self._usable, ["arch", "task", "seed"]]
        return frame.merge(usable, on=["arch", "task", "seed"])

    def steps_needed(self, arch: str, task: str) -> str:
        """What the learnability tables say this pair needs: the fewest steps at which a
        seed-0 run reached :data:`~statelayers.report.learnability.STEPS_TO_95_ACCURACY` on validation, or that none did within the
        longest cap tried."""
        if self.learnability is None:
            return ""
        rows = self.learnability[(self.learnability["arch"] == arch) & (self.learnability["task"] == task)]
        if rows.empty:
            return ""
        reached = rows["steps_to_95"].dropna()
        if len(reached):
            return f"it reached validation {STEPS_TO_95_ACCURACY} at step {int(reached.min())} of a seed-0 run"
        longest = rows.loc[rows["cap"].idxmax()]
        return (
            f"it needs more than {int(longest['cap'])} steps (seed 0 reached "
            f"{longest['best_val_accuracy']:.3f} validation accuracy in {int(longest['cap'])})"
        )

    def failures(self, arch: str, task: str) -> str | None:
        """The reason "<arch> did not learn <task> (accuracy ...)" when a seed of it did not
        learn (and which label probes did not converge), else None."""
        runs = self.runs[(self.runs["arch"] == arch) & (self.runs["task"] == task)].sort_values("seed")
        usable = self._usable.loc[runs.index]
        failed = runs[~runs["learned"]]
        unconverged = runs[runs["learned"] & ~usable]
        if failed.empty and unconverged.empty:
            return None
        parts = []
        if len(failed):
            accuracy = ", ".join(f"{row.accuracy:.3f} at seed {row.seed}" for row in failed.itertuples())
            parts.append(f"{arch} did not learn {task} (accuracy {accuracy})")
        if len(unconverged):
            seeds = ", ".join(map(str, unconverged["seed"]))
            parts.append(f"{arch} on {task}: label probes did not converge at seed {seeds}")
        reason = "; ".join(parts)
        kept = runs.loc[usable, "seed"].tolist()
        if kept:
            verb = "learned" if unconverged.empty else "is usable"
            reason += f"; it {verb} at seed {', '.join(map(str, kept))} only"
        needed = self.steps_needed(arch, task) if len(failed) else ""
        return f"{reason}; {needed}" if needed else reason

    def blocking(self, needs: list[tuple[str, str]]) -> tuple[str, ...]:
        """The reasons a sub-claim needing these (arch, task) pairs cannot be decided:
        each pair with fewer than :data:`MIN_LEARNED_SEEDS` usable seeds and a seed that is not."""
        reasons = []
        for arch, task in dict.fromkeys(needs):
            mine = (self.runs["arch"] == arch) & (self.runs["task"] == task)
            failure = self.failures(arch, task)
            if failure and (self._usable & mine).sum() < MIN_LEARNED_SEEDS:
                reasons.append(failure)
        return tuple(reasons)
