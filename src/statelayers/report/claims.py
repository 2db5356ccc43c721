"""The claims check: which of the paper's findings (STUDY.md, 1-7) this run reproduces.

The rules were written down before any result was looked at and are applied unchanged
whatever the scale. Each finding is a list of sub-claims; each sub-claim is a quantity
computed per seed (differences between architectures are paired by seed) whose 95 %
Student-t interval over seeds (:mod:`statelayers.report.stats`) is compared with a bound
and a margin of practical equivalence (:data:`MARGINS`, one per kind of quantity, fixed
before the first run with them was looked at). A sub-claim is one of two kinds:

- ``greater`` (the value exceeds the bound: "A beats B" is A - B > 0): *supported* when
  the whole interval lies above ``bound + margin``; *contradicted* when it lies below
  ``bound + margin``, i.e. inside the margin (no practical difference) or beyond it on
  the other side;
- ``at_least`` (the value reaches the bound: "accuracy >= 0.99"): *supported* when the
  whole interval lies above ``bound - margin`` (at or above the bound, or equivalent to
  it); *contradicted* when it lies below ``bound - margin``; so a threshold is met
  within its margin (>= 0.99 passes from 0.98 up);
- ``at_most`` (the mirror: "an erasure costs practically nothing" is drop <= 0):
  supported when the interval lies below ``bound + margin``, contradicted above it;

and *unresolved* otherwise. No sub-claim is decided from fewer than :data:`MIN_SEEDS`
per-seed values: it is unresolved with the reason "fewer than 3 seeds".

A finding is ``reproduced`` when every sub-claim is supported, ``not reproduced`` when
any sub-claim is contradicted, and ``inconclusive`` otherwise; a finding whose stage,
architectures or tasks are absent from the run is ``inconclusive`` with that reason.

Only models that learned: a run has learned its task when its test token accuracy at
the training length is at least :data:`LEARNED_ACCURACY` (0.95; fixed before the runs
trained to a criterion were looked at). Findings 2-5 are about how a model that solves
a task encodes it, so they use only runs that learned the task they are about (finding
1, behaviour, keeps every run; 6 and 7 are not gated). A sub-claim that needs an
architecture on a task where fewer than :data:`MIN_LEARNED_SEEDS` seeds learned it,
and at least one did not, is unresolved with the reason "<arch> did not learn <task>
(accuracy <x> at seed <s>, ...)"; its finding is then ``inconclusive`` whatever its
other sub-claims say, and the reason names those runs (and any sub-claim contradicted
among the runs that learned). Finding 5 pools architectures: it uses the learned runs
of the task, names the runs it left out, and is unresolved only when the runs of the
task that learned it cover fewer than :data:`MIN_LEARNED_SEEDS` seeds.

Layer numbering: block ``b`` here (layer ``b >= 1``; 0 is the embedding) is the
paper's ``L{b-1}``. Sub-claims per finding:

1. Behaviour (token accuracy, mean over evaluation lengths): LSTM and GRU reach >= 0.99
   at every length on parity and s3; on dyck, recurrent (mean of LSTM, GRU) beats
   Mamba, Mamba-2 and the Transformer; on s3 and on parity, recurrent > SSM (mean of
   Mamba, Mamba-2) > Transformer.
2. Prefix tasks (parity, s3; probes of the training label): for Mamba and LSTM the last
   block is the first to reach 95 % of the best block (``first_layer_95 == n_blocks``,
   i.e. minus ``n_blocks`` >= 0), and their late concentration exceeds the Transformer's.
3. Dyck: the Transformer reaches 95 % by block 2 (paper L0-L1): ``2 - first_layer_95 >= 0``;
   Mamba and LSTM reach it later than the Transformer.
4. S3 follows Parity: for every architecture, the late concentration on s3 is closer to
   parity's than to dyck's (distance to dyck minus distance to parity > 0).
5. Necessity: erasing the probe directions at each run's best probe layer costs more
   accuracy than random subspaces of the same rank at that layer, at the training length
   and at the longest intervention length, per task (units: architecture x seed).
6. Pretrained scale (models named ``pythia-160m`` and ``mamba-130m`` in the config;
   dyck; units: fine-tuning seeds; erasure of the probe directions at the training
   length). Pythia-160M: the largest drop over the middle third of its blocks exceeds
   the drop at its last block, and its best probe block lies after its most necessary
   block. Mamba-130M: its last block's probe accuracy is within 0.05 of its best block,
   erasing the probe directions there costs practically nothing (the paper's < 0.002
   is below the erasure margin, so: drop <= 0 within it), and patching the input of
   its last block (layer ``n_blocks - 1``) from the clean run into the corrupted one at
   the middle half of the positions recovers >= 0.9 of the logit difference (the
   thresholds within their margins: 0.05 + 0.02 of probe accuracy, 0.9 - 0.02; the output
   of the last block at an earlier position cannot reach the metric position; its input
   can, through the block's recurrence).
7. Conv1D (the ``mamba_noconv`` twin trained without it; :mod:`statelayers.report.conv1d`):
   the accuracy lost without Conv1D (Mamba minus twin, percentage points of token
   accuracy averaged over evaluation lengths, paired by seed) is > 0 on s3 and on parity,
   and larger on s3 than on dyck. Paired t-tests with Holm's correction are reported
   beside it in ``conv1d_summary.csv``.

Findings 1-5 concern the five families; Conv1D-ablated twins enter finding 7 only.

Three readings of findings 2-5 are reported: the verdicts use the runs that learned and
the probe accuracy; ``on_gains`` repeats 2-4 on the gain over the untrained twin; and
``ungated`` repeats 2-5 on every run, learned or not, the way the paper reads its S3
profiles of models that did not solve S3. Only the first decides a verdict.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from statelayers.models.registry import FAMILIES, RECURRENT, SSM
from statelayers.report.conv1d import per_seed_differences
from statelayers.report.stats import INTERVAL_KIND, IntervalConfig, mean_ci, profile_shapes, rounding_sd

LEARNED_ACCURACY = 0.95
"""Test token accuracy at the training length from which a run counts as having learned its task."""
GAIN_PROFILE = "gain_over_untrained"
"""The profile findings 2-4 are also reported on (``on_gains``): accuracy minus the untrained twin's."""
MIN_SEEDS = 3
"""Per-seed values a sub-claim needs before it is decided: fewer say too little about seed variance."""
MIN_LEARNED_SEEDS = MIN_SEEDS
"""Learned seeds an architecture needs on a task for a sub-claim about it."""
FEWER_SEEDS = f"fewer than {MIN_SEEDS} seeds"
SIGNS = {"greater": ">", "at_least": ">=", "at_most": "<="}
"""The sub-claim kinds (module docstring) and how each reads."""


@dataclass(frozen=True)
class Quantity:
    """A kind of per-seed quantity, with its margin of practical equivalence."""

    name: str
    margin: float
    """Differences smaller than this are no difference for any finding (same units as the values)."""
    sd_floor: float = 0.0
    """Smallest standard deviation of the values (rounding to a grid:
    :func:`statelayers.report.stats.rounding_sd`)."""


TOKEN_ACCURACY = Quantity("token accuracy", 0.01)
"""One percentage point: below any behavioural difference a finding turns on (the paper's
orderings differ by several points; its non-significant Conv1D effect on Dyck is 4 points)."""
TOKEN_ACCURACY_PP = Quantity("token accuracy, percentage points", 1.0)
""":data:`TOKEN_ACCURACY` in the percentage points finding 7 is stated in."""
PROBE_ACCURACY = Quantity("probe accuracy", 0.02)
"""Two percentage points of probe accuracy, for probe accuracies and the profile shapes made of
them: about twice a probe's own sampling error on its held-out tokens (a quarter of 320
sequences x 40 tokens: standard error <= 0.9 points), and a fifth of the smallest profile
difference the paper describes (Transformer 76 against Mamba 60 % at L1 on Parity)."""
LAYER_POSITION = Quantity("layer position", 0.5, sd_floor=rounding_sd(1.0))
"""Half a block: positions are whole blocks, so less than half a block is no difference in position."""
LAYER_DIFFERENCE = Quantity("layer position difference", 0.5, sd_floor=rounding_sd(1.0, terms=2))
""":data:`LAYER_POSITION`'s margin for the difference of two positions (two rounding errors)."""
ERASURE_DROP = Quantity("erasure drop", 0.01)
"""One percentage point of token accuracy lost to an erasure (a drop is an accuracy
difference): the paper's erasures cost tens of points where they matter."""
RECOVERY = Quantity("patching recovery", 0.02)
"""Two percent of the clean - corrupted logit difference (the paper's recoveries: 97-98 %)."""
MARGINS = {
    q.name: q.margin
    for q in (
        TOKEN_ACCURACY,
        TOKEN_ACCURACY_PP,
        PROBE_ACCURACY,
        LAYER_POSITION,
        LAYER_DIFFERENCE,
        ERASURE_DROP,
        RECOVERY,
    )
}
"""Every margin, by kind of quantity (docs/methods.md lists them with their reasons)."""

PAPER = {
    1: "recurrent generalise perfectly on Parity and S3 and beat SSMs and Transformers on Dyck; "
    "S3 ordering recurrent > SSM > Transformer mirrors Parity",
    2: "Parity/S3: Mamba and LSTM jump at the last layer (Mamba Parity 55/60/71/100); "
    "Transformers rise gradually (55/76/98/100)",
    3: "Dyck: Transformer readable at L0-L1 (100/100/100/100); "
    "Mamba and LSTM rise gradually (Mamba 73/100/100/100)",
    4: "S3 follows Parity's profile in every architecture",
    5: "ablating the best probe direction causes significant drops, also at unseen lengths",
    6: "Pythia-160M Dyck bottleneck at L6-L7 (-81 %), best probe L11; Mamba-130M patching recovers 97-98 %",
    7: "removing Conv1D: S3 -12.64 pp, Parity -6.83 pp (significant), Dyck +4.04 pp (n.s.)",
}


@dataclass
class SubClaim:
    name: str
    per_seed: pd.Series
    quantity: Quantity
    bound: float = 0.0
    kind: str = "greater"
    """``greater``: the value exceeds ``bound``; ``at_least``: it reaches ``bound``; ``at_most``:
    it does not exceed ``bound`` (module docstring)."""
    unlearned: tuple[str, ...] = ()
    """Why it cannot be decided: the models it needs that did not learn their task."""
    note: str = ""
    """Said beside the measured numbers (runs left out of a pooled sub-claim)."""

    def evaluate(self, config: IntervalConfig) -> dict:
        """Status, reason text and the numbers behind it (a row of ``subclaims.csv``).
        A sub-claim blocked by runs that did not learn still shows its interval over the
        runs that did."""
        per_seed = self.per_seed.dropna()
        values = per_seed.to_numpy()
        seeds = (
            per_seed.index.get_level_values("seed").nunique()
            if "seed" in per_seed.index.names
            else len(values)
        )
        margin = self.quantity.margin
        row = {
            "subclaim": self.name,
            "kind": self.kind,
            "bound": self.bound,
            "quantity": self.quantity.name,
            "margin": margin,
            "interval": f"{config.confidence:.0%} {INTERVAL_KIND}",
            "n": len(values),
            "seeds": seeds,
            "mean": float("nan"),
            "ci_low": float("nan"),
            "ci_high": float("nan"),
        }
        numbers = ""
        if len(values):
            mean, low, high = mean_ci(values, config, self.quantity.sd_floor)
            row |= {"mean": mean, "ci_low": low, "ci_high": high}
            numbers = (
                f"{mean:+.3f} [{low:+.3f}, {high:+.3f}] (n={len(values)}) "
                f"vs {SIGNS[self.kind]} {self.bound:+.3f}, margin {margin:g}"
            )
        if self.unlearned:
            reason = "; ".join(self.unlearned)
            text = f"{self.name}: unresolved, {reason}" + (f" (learned runs: {numbers})" if numbers else "")
            return row | {"status": "unlearned", "text": text, "reason": reason}
        if not numbers:
            return row | {"status": "missing", "text": f"{self.name}: no data", "reason": "no data"}
        text = f"{self.name}: {numbers}" + (f" ({self.note})" if self.note else "")
        if seeds < MIN_SEEDS:
            return row | {"status": "unresolved", "text": f"{text}: {FEWER_SEEDS}", "reason": FEWER_SEEDS}
        low, high = row["ci_low"], row["ci_high"]
        if self.kind == "at_most":
            edge = self.bound + margin
            status = "supported" if high < edge else "contradicted" if low > edge else "unresolved"
        else:
            edge = self.bound + margin if self.kind == "greater" else self.bound - margin
            status = "supported" if low > edge else "contradicted" if high < edge else "unresolved"
        return row | {"status": status, "text": text, "reason": ""}

    def status(self, config: IntervalConfig) -> tuple[str, str]:
        result = self.evaluate(config)
        return result["status"], result["text"]


def _rests_on(rows: list[dict]) -> str:
    """What a verdict rests on, from its sub-claims' rows (:meth:`SubClaim.evaluate`):
    seeds (and pooled units), interval kind, the margins of its quantities."""
    if not rows:
        return ""

    def span(key: str) -> str:
        values = sorted({row[key] for row in rows})
        return f"{values[0]}-{values[-1]}" if len(values) > 1 else str(values[0])

    pooled = any(row["n"] != row["seeds"] for row in rows)
    seeds = f"{span('seeds')} seeds" + (f" ({span('n')} architecture x seed units)" if pooled else "")
    margins = dict.fromkeys(f"{row['quantity']} {row['margin']:g}" for row in rows)
    return f"{seeds} per sub-claim; {rows[0]['interval']} intervals; margins: {', '.join(margins)}"


@dataclass
class Finding:
    number: int
    claims: list[SubClaim] = field(default_factory=list)
    missing: str | None = None

    def statuses(self, config: IntervalConfig) -> str:
        """Each sub-claim's numbers and status, for reporting beside a verdict."""
        if self.missing:
            return self.missing
        results = [claim.status(config) for claim in self.claims]
        return " | ".join(text if status == "unlearned" else f"{text}: {status}" for status, text in results)

    def verdict(self, config: IntervalConfig) -> dict:
        if self.missing:
            return {"verdict": "inconclusive", "reason": self.missing, "measured": "", "rests_on": ""}
        results = [claim.evaluate(config) for claim in self.claims]
        statuses = [result["status"] for result in results]
        measured = " | ".join(result["text"] for result in results)
        rests_on = _rests_on(results)
        unlearned = list(dict.fromkeys(reason for claim in self.claims for reason in claim.unlearned))
        if unlearned:
            contradicted = [claim.name for claim, s in zip(self.claims, statuses) if s == "contradicted"]
            reason = "; ".join(unlearned)
            if contradicted:
                reason += " (contradicted among the runs that learned: " + "; ".join(contradicted) + ")"
            return {"verdict": "inconclusive", "reason": reason, "measured": measured, "rests_on": rests_on}
        few = [claim.name for claim, result in zip(self.claims, results) if result["reason"] == FEWER_SEEDS]
        if "contradicted" in statuses:
            verdict, reason = (
                "not reproduced",
                "contradicted: "
                + "; ".join(claim.name for claim, s in zip(self.claims, statuses) if s == "contradicted"),
            )
        elif all(s == "supported" for s in statuses):
            verdict, reason = "reproduced", "every sub-claim supported"
        elif few:
            verdict, reason = "inconclusive", f"fewer than {MIN_SEEDS} seeds: " + "; ".join(few)
        else:
            verdict, reason = (
                "inconclusive",
                "intervals do not clear the margin: "
                + "; ".join(claim.name for claim, s in zip(self.claims, statuses) if s != "supported"),
            )
        return {"verdict": verdict, "reason": reason, "measured": measured, "rests_on": rests_on}

    def rows(self, config: IntervalConfig, reading: str) -> list[dict]:
        """One row per sub-claim for ``subclaims.csv``."""
        return [
            {"finding": self.number, "reading": reading, **claim.evaluate(config)} for claim in self.claims
        ]


def learned_runs(behaviour: pd.DataFrame, train_length: int) -> pd.DataFrame:
    """arch, task, seed, accuracy (test token accuracy at ``train_length``) and ``learned``
    (accuracy >= :data:`LEARNED_ACCURACY`), one row per run of ``behaviour.csv``."""
    at_train = behaviour[behaviour["eval_length"] == train_length]
    if at_train.empty:
        raise ValueError(f"behaviour has no rows at the training length {train_length}")
    runs = at_train.groupby(["arch", "task", "seed"], as_index=False)["token_accuracy"].mean()
    runs = runs.rename(columns={"token_accuracy": "accuracy"})
    return runs.assign(learned=runs["accuracy"] >= LEARNED_ACCURACY)


@dataclass
class Learned:
    """Which runs learned their task (:func:`learned_runs`), to filter tables and gate sub-claims."""

    runs: pd.DataFrame

    def keep(self, frame: pd.DataFrame) -> pd.DataFrame:
        """The rows of ``frame`` (keyed by arch, task, seed) that belong to runs that learned."""
        learned = self.runs.loc[self.runs["learned"], ["arch", "task", "seed"]]
        return frame.merge(learned, on=["arch", "task", "seed"])

    def failures(self, arch: str, task: str) -> str | None:
        """The reason "<arch> did not learn <task> (accuracy ...)" when a seed of it did not learn."""
        runs = self.runs[(self.runs["arch"] == arch) & (self.runs["task"] == task)].sort_values("seed")
        failed = runs[~runs["learned"]]
        if failed.empty:
            return None
        accuracy = ", ".join(f"{row.accuracy:.3f} at seed {row.seed}" for row in failed.itertuples())
        reason = f"{arch} did not learn {task} (accuracy {accuracy})"
        learned = runs.loc[runs["learned"], "seed"].tolist()
        if learned:
            reason += f"; it learned at seed {', '.join(map(str, learned))} only"
        return reason

    def blocking(self, needs: list[tuple[str, str]]) -> tuple[str, ...]:
        """The reasons a sub-claim needing these (arch, task) pairs cannot be decided:
        each pair with fewer than :data:`MIN_LEARNED_SEEDS` learned seeds and a seed that did not learn."""
        reasons = []
        for arch, task in dict.fromkeys(needs):
            runs = self.runs[(self.runs["arch"] == arch) & (self.runs["task"] == task)]
            failure = self.failures(arch, task)
            if failure and runs["learned"].sum() < MIN_LEARNED_SEEDS:
                reasons.append(failure)
        return tuple(reasons)


def _by_seed(frame: pd.DataFrame, arch: str | tuple[str, ...], value: str) -> pd.Series:
    archs = (arch,) if isinstance(arch, str) else arch
    return frame[frame["arch"].isin(archs)].groupby("seed")[value].mean()


def _requires(available: set, needed: set, what: str) -> str | None:
    absent = sorted(needed - available)
    return f"{what} not in this run: {', '.join(absent)}" if absent else None


def behaviour_finding(behaviour: pd.DataFrame) -> Finding:
    finding = Finding(1)
    finding.missing = _requires(
        set(behaviour["arch"]), {"transformer", *RECURRENT, *SSM}, "architectures"
    ) or _requires(set(behaviour["task"]), {"parity", "s3", "dyck"}, "tasks")
    if finding.missing:
        return finding
    mean_acc = behaviour.groupby(["arch", "task", "seed"])["token_accuracy"].mean().reset_index()
    worst_length = behaviour.groupby(["arch", "task", "seed"])["token_accuracy"].min().reset_index()
    task = lambda frame, name: frame[frame["task"] == name]  # noqa: E731
    for name in ("parity", "s3"):
        for arch in RECURRENT:
            finding.claims.append(
                SubClaim(
                    f"{arch} {name} worst-length accuracy >= 0.99",
                    _by_seed(task(worst_length, name), arch, "token_accuracy"),
                    TOKEN_ACCURACY,
                    0.99,
                    "at_least",
                )
            )
    dyck = task(mean_acc, "dyck")
    for other in (*SSM, "transformer"):
        finding.claims.append(
            SubClaim(
                f"dyck recurrent - {other}",
                _by_seed(dyck, RECURRENT, "token_accuracy") - _by_seed(dyck, other, "token_accuracy"),
                TOKEN_ACCURACY,
            )
        )
    for name in ("s3", "parity"):
        frame = task(mean_acc, name)
        recurrent, ssm, transformer = (
            _by_seed(frame, a, "token_accuracy") for a in (RECURRENT, SSM, "transformer")
        )
        finding.claims += [
            SubClaim(f"{name} recurrent - SSM", recurrent - ssm, TOKEN_ACCURACY),
            SubClaim(f"{name} SSM - transformer", ssm - transformer, TOKEN_ACCURACY),
        ]
    return finding


def profile_findings(
    probes: pd.DataFrame, learned: Learned, profile: str = "probe_accuracy"
) -> list[Finding]:
    """Findings 2-4, from the probe profiles of the runs that learned: of the probe
    accuracy, or of one of its gains over a baseline (``profile`` in
    :data:`statelayers.report.stats.PROFILE_GAINS`, reported beside the verdicts)."""
    n_blocks = int(probes["layer"].max())
    archs, tasks = set(probes["arch"]), set(probes["task"])
    shapes = profile_shapes(probes)
    shapes = learned.keep(shapes[shapes["target"] == "labels"])
    prefix = "" if profile == "probe_accuracy" else f"{profile}_"
    task = lambda name: shapes[shapes["task"] == name]  # noqa: E731
    late = lambda name, arch: _by_seed(task(name), arch, f"{prefix}late_concentration")  # noqa: E731
    first = lambda name, arch: _by_seed(task(name), arch, f"{prefix}first_layer_95")  # noqa: E731

    def claim(
        name: str, per_seed: pd.Series, quantity: Quantity, kind: str, needs: list[tuple[str, str]]
    ) -> SubClaim:
        return SubClaim(name, per_seed, quantity, kind=kind, unlearned=learned.blocking(needs))

    jump = Finding(2)
    jump.missing = _requires(archs, {"mamba", "lstm", "transformer"}, "architectures") or _requires(
        tasks, {"parity", "s3"}, "tasks"
    )
    if not jump.missing:
        for name in ("parity", "s3"):
            for arch in ("mamba", "lstm"):
                jump.claims.append(
                    claim(
                        f"{name} {arch} first block at 95 % - last block",
                        first(name, arch) - n_blocks,
                        LAYER_POSITION,
                        "at_least",
                        [(arch, name)],
                    )
                )
                jump.claims.append(
                    claim(
                        f"{name} {arch} - transformer late concentration",
                        late(name, arch) - late(name, "transformer"),
                        PROBE_ACCURACY,
                        "greater",
                        [(arch, name), ("transformer", name)],
                    )
                )

    dyck = Finding(3)
    dyck.missing = _requires(archs, {"mamba", "lstm", "transformer"}, "architectures") or _requires(
        tasks, {"dyck"}, "tasks"
    )
    if not dyck.missing:
        dyck.claims.append(
            claim(
                "dyck transformer: 2 - first block at 95 %",
                2 - first("dyck", "transformer"),
                LAYER_POSITION,
                "at_least",
                [("transformer", "dyck")],
            )
        )
        for arch in ("mamba", "lstm"):
            dyck.claims.append(
                claim(
                    f"dyck {arch} - transformer first block at 95 %",
                    first("dyck", arch) - first("dyck", "transformer"),
                    LAYER_DIFFERENCE,
                    "greater",
                    [(arch, "dyck"), ("transformer", "dyck")],
                )
            )

    follows = Finding(4)
    follows.missing = _requires(tasks, {"parity", "s3", "dyck"}, "tasks")
    if not follows.missing:
        for arch in sorted(archs & set(FAMILIES)):
            closer = (late("s3", arch) - late("dyck", arch)).abs() - (
                late("s3", arch) - late("parity", arch)
            ).abs()
            follows.claims.append(
                claim(
                    f"{arch}: |s3 - dyck| - |s3 - parity| late concentration",
                    closer,
                    PROBE_ACCURACY,
                    "greater",
                    [(arch, "s3"), (arch, "dyck"), (arch, "parity")],
                )
            )
    return [jump, dyck, follows]


def necessity_finding(
    ablations: pd.DataFrame | None, readability: pd.DataFrame | None, learned: Learned
) -> Finding:
    """Finding 5, pooled over the architectures' runs that learned each task."""
    finding = Finding(5)
    if ablations is None or readability is None or ablations.empty:
        finding.missing = "interventions stage did not run"
        return finding
    best = readability[readability["method"] == "probe"][["arch", "task", "seed", "best_probe_layer"]]
    at_best = ablations.merge(best, on=["arch", "task", "seed"])
    at_best = at_best[at_best["layer"] == at_best["best_probe_layer"]]
    keys = ["arch", "task", "seed", "eval_length"]
    probe = at_best[at_best["method"] == "probe"].set_index(keys)
    random = at_best[at_best["method"] == "random"].groupby([*keys, "rank"])["drop"].mean()
    matched_random = random.reindex(
        pd.MultiIndex.from_arrays([*(probe.index.get_level_values(k) for k in keys), probe["rank"]])
    ).to_numpy()
    excess = (probe["drop"] - matched_random).rename("excess").reset_index()
    lengths = sorted(excess["eval_length"].unique())
    kept = learned.keep(excess)
    for name, frame in excess.groupby("task"):
        failures = [learned.failures(arch, name) for arch in sorted(frame["arch"].unique())]
        failures = tuple(failure for failure in failures if failure)
        units_learned = kept[kept["task"] == name][["arch", "seed"]].drop_duplicates()
        blocked = failures if units_learned["seed"].nunique() < MIN_LEARNED_SEEDS else ()
        note = "left out: " + "; ".join(failures) if failures and not blocked else ""
        for length in dict.fromkeys((lengths[0], lengths[-1])):
            at_length = kept[(kept["task"] == name) & (kept["eval_length"] == length)]
            finding.claims.append(
                SubClaim(
                    f"{name} L={length}: probe-direction drop - random drop",
                    at_length.set_index(["arch", "seed"])["excess"],
                    ERASURE_DROP,
                    unlearned=blocked,
                    note=note,
                )
            )
    return finding


def pretrained_finding(
    probes: pd.DataFrame | None, ablations: pd.DataFrame | None, patching: pd.DataFrame | None
) -> Finding:
    finding = Finding(6)
    if probes is None or ablations is None:
        finding.missing = "pretrained stage did not run (pretrained.enabled: false)"
        return finding
    finding.missing = _requires(set(probes["arch"]), {"pythia-160m", "mamba-130m"}, "pretrained models") or (
        _requires(set(probes["task"]), {"dyck"}, "tasks")
    )
    if finding.missing:
        return finding
    fit_length = probes.loc[probes["split"] == "probe", "eval_length"].iloc[0]
    readable = probes[
        (probes["split"] == "probe") & (probes["target"] == "labels") & (probes["task"] == "dyck")
    ]
    erased = ablations[
        (ablations["method"] == "probe")
        & (ablations["task"] == "dyck")
        & (ablations["eval_length"] == fit_length)
    ]

    def per_layer(frame: pd.DataFrame, arch: str, value: str) -> pd.DataFrame:
        return frame[frame["arch"] == arch].pivot_table(index="seed", columns="layer", values=value)

    drop, accuracy = (
        per_layer(erased, "pythia-160m", "drop"),
        per_layer(readable, "pythia-160m", "probe_accuracy"),
    )
    n_blocks = drop.columns.max()
    middle = [b for b in drop.columns if n_blocks / 3 <= b <= 2 * n_blocks / 3]
    finding.claims += [
        SubClaim(
            "pythia-160m: middle-third max drop - last-block drop",
            drop[middle].max(axis=1) - drop[n_blocks],
            ERASURE_DROP,
        ),
        SubClaim(
            "pythia-160m: best probe block - most necessary block",
            accuracy.drop(columns=0).idxmax(axis=1) - drop.drop(columns=0).idxmax(axis=1),
            LAYER_DIFFERENCE,
        ),
    ]
    drop, accuracy = (
        per_layer(erased, "mamba-130m", "drop"),
        per_layer(readable, "mamba-130m", "probe_accuracy"),
    )
    n_blocks = accuracy.columns.max()
    finding.claims += [
        SubClaim(
            "mamba-130m: last-block probe accuracy - best + 0.05",
            accuracy[n_blocks] - accuracy.drop(columns=0).max(axis=1) + 0.05,
            PROBE_ACCURACY,
            kind="at_least",
        ),
        SubClaim(
            "mamba-130m: last-block probe-direction drop (practically zero)",
            drop[n_blocks],
            ERASURE_DROP,
            kind="at_most",
        ),
    ]
    if patching is None or "mamba-130m" not in set(patching["arch"]):
        finding.claims.append(
            SubClaim("mamba-130m: patching recovery - 0.9 (patching did not run)", pd.Series(), RECOVERY)
        )
        return finding
    patched = patching[
        (patching["arch"] == "mamba-130m")
        & (patching["task"] == "dyck")
        & (patching["direction"] == "denoising")
        & (patching["layer"] == n_blocks - 1)
    ]
    length = patched["position"].max() + 1
    patched = patched[patched["position"].between(length / 4, 3 * length / 4)]
    finding.claims.append(
        SubClaim(
            "mamba-130m: mid-position recovery at the last block's input - 0.9",
            patched.groupby("seed")["fraction"].mean() - 0.9,
            RECOVERY,
            kind="at_least",
        )
    )
    return finding


def conv1d_finding(conv1d: pd.DataFrame | None) -> Finding:
    finding = Finding(7)
    if conv1d is None or "mamba" not in set(conv1d["family"]):
        finding.missing = "Conv1D attribution did not run: add mamba_noconv to the architectures"
        return finding
    trained = per_seed_differences(conv1d[conv1d["family"] == "mamba"])
    trained = trained[trained["variant"] == "noconv_trained"]
    finding.missing = _requires(set(trained["task"]), {"parity", "s3", "dyck"}, "tasks")
    if finding.missing:
        return finding
    lost = {task: -group.set_index("seed")["difference_pp"] for task, group in trained.groupby("task")}
    finding.claims = [
        SubClaim("s3 accuracy lost without Conv1D (pp)", lost["s3"], TOKEN_ACCURACY_PP),
        SubClaim("parity accuracy lost without Conv1D (pp)", lost["parity"], TOKEN_ACCURACY_PP),
        SubClaim("s3 loss - dyck loss (pp)", lost["s3"] - lost["dyck"], TOKEN_ACCURACY_PP),
    ]
    return finding


@dataclass
class ClaimsCheck:
    verdicts: pd.DataFrame
    """``claims.csv``: one row per finding: verdict, reason, measured numbers, what it rests
    on, the gain and ungated readings, the paper's numbers, the run's scale."""
    subclaims: pd.DataFrame
    """``subclaims.csv``: one row per (finding, reading, sub-claim): kind, bound, quantity,
    margin, interval kind, n (values: seeds, or architecture x seed units when pooled),
    seeds, mean, ci_low, ci_high, status, reason."""


SUBCLAIM_COLUMNS = [
    "finding", "reading", "subclaim", "kind", "bound", "quantity", "margin",
    "interval", "n", "seeds", "mean", "ci_low", "ci_high", "status", "reason",
]  # fmt: skip


def check_claims(
    behaviour: pd.DataFrame,
    probes: pd.DataFrame,
    ablations: pd.DataFrame | None,
    readability: pd.DataFrame | None,
    scale: str,
    train_length: int,
    config: IntervalConfig = IntervalConfig(),
    conv1d: pd.DataFrame | None = None,
    pretrained_probes: pd.DataFrame | None = None,
    pretrained_ablations: pd.DataFrame | None = None,
    patching: pd.DataFrame | None = None,
) -> ClaimsCheck:
    """Verdicts on findings 1-7 and every sub-claim's numbers, in three readings: ``gated``
    (the verdicts), ``on_gains`` (2-4 on the gain profile) and ``ungated`` (2-5 on every run).

    ``train_length`` is where :func:`learned_runs` reads whether a run learned its task.
    """
    runs = learned_runs(behaviour, train_length)
    learned, everyone = Learned(runs), Learned(runs.assign(learned=True))
    findings = [
        behaviour_finding(behaviour),
        *profile_findings(probes, learned),
        necessity_finding(ablations, readability, learned),
        pretrained_finding(pretrained_probes, pretrained_ablations, patching),
        conv1d_finding(conv1d),
    ]
    readings = {
        "on_gains": profile_findings(probes, learned, GAIN_PROFILE) if GAIN_PROFILE in probes else [],
        "ungated": [*profile_findings(probes, everyone), necessity_finding(ablations, readability, everyone)],
    }
    side = {name: {f.number: f.statuses(config) for f in found} for name, found in readings.items()}
    verdicts = pd.DataFrame(
        [
            {
                "finding": f.number,
                **f.verdict(config),
                **{name: side[name].get(f.number, "") for name in readings},
                "paper": PAPER[f.number],
                "scale": scale,
            }
            for f in findings
        ]
    )
    rows = [row for f in findings for row in f.rows(config, "gated")]
    rows += [row for name, found in readings.items() for f in found for row in f.rows(config, name)]
    subclaims = pd.DataFrame(rows, columns=[*SUBCLAIM_COLUMNS, "text"]).drop(columns="text")
    return ClaimsCheck(verdicts, subclaims)


def claims_markdown(check: ClaimsCheck, learned: pd.DataFrame, train_length: int) -> str:
    """The claims table, what each verdict rests on, every sub-claim with its interval,
    margin and n, the other readings, and which runs learned their task (``learned``:
    :func:`learned_runs`)."""
    claims = check.verdicts
    lines = ["| # | verdict | reason | rests on | paper |", "|---|---|---|---|---|"]
    lines += [
        f"| {r.finding} | **{r.verdict}** | {r.reason} | {r.rests_on} | {r.paper} |"
        for r in claims.itertuples()
    ]
    kind = check.subclaims["interval"].iloc[0] if len(check.subclaims) else INTERVAL_KIND
    subclaims = [
        f"| # | sub-claim | n | mean [{kind} CI] | claimed | margin | status |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in check.subclaims[check.subclaims["reading"] == "gated"].itertuples():
        interval = f"{r.mean:+.3f} [{r.ci_low:+.3f}, {r.ci_high:+.3f}]" if pd.notna(r.mean) else ""
        claimed = f"{SIGNS[r.kind]} {r.bound:+.3f}"
        status = f"{r.status} ({r.reason})" if r.reason else r.status
        subclaims.append(
            f"| {r.finding} | {r.subclaim} | {r.n} | {interval} | {claimed} "
            f"| {r.margin:g} ({r.quantity}) | {status} |"
        )
    other = {
        "on_gains": "Findings 2-4 on the gain over the untrained twin (verdicts use accuracy)",
        "ungated": "Findings 2-5 on every run, learned or not (the paper's reading; verdicts are gated)",
    }
    sections = []
    for column, title in other.items():
        entries = [
            f"- **{r.finding}**: {getattr(r, column)}"
            for r in claims.itertuples()
            if pd.notna(getattr(r, column)) and getattr(r, column)
        ]
        sections += [f"\n## {title}\n", *entries] if entries else []
    runs = ["| arch | task | seeds learned | test token accuracy at each seed |", "|---|---|---|---|"]
    for (arch, task), group in learned.groupby(["arch", "task"], sort=False):
        accuracy = ", ".join(f"{a:.3f}" for a in group.sort_values("seed")["accuracy"])
        runs.append(f"| {arch} | {task} | {int(group['learned'].sum())} of {len(group)} | {accuracy} |")
    scale = claims["scale"].iloc[0]
    margins = ", ".join(f"{name} {margin:g}" for name, margin in MARGINS.items())
    return "\n".join(
        [
            f"# Claims check\n\nScale: {scale}\n",
            (
                f"Intervals: {kind} over seeds; no sub-claim is decided from fewer than "
                f"{MIN_SEEDS} seeds. Margins of practical equivalence: {margins}.\n"
            ),
            *lines,
            "\n## Sub-claims (verdicts)\n",
            *subclaims,
            *sections,
            (
                f"\n## Runs that learned their task (test token accuracy at L = {train_length} "
                f">= {LEARNED_ACCURACY})\n"
            ),
            "Findings 2-5 use only these runs.\n",
            *runs,
            "",
        ]
    )
