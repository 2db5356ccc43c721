"""The claims check: which of the paper's findings (docs/study.md, 1-7) this run reproduces.

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
per-seed values: it is unresolved with the reason "fewer than 3 seeds". Every unresolved
sub-claim carries a planning figure: the seeds at which its observed mean and sd would
clear the margin (:func:`statelayers.report.stats.seeds_to_decide`).

A finding is the conjunction of its deciding sub-claims:

- ``not reproduced`` when any of them is contradicted on runs that learned, whatever the
  untested ones would show; the reason names the contradicted ones and lists what could
  not be tested (pairs that did not learn, with the steps
  ``benchmarks/learnability*.csv`` says they need);
- ``reproduced`` only when every one is supported (a finding without sub-claims is not);
- ``inconclusive`` otherwise: none contradicted, at least one unresolved or untested;
  the reason says what would decide each (seeds, or steps).

A finding whose stage, architectures or tasks are absent from the run is ``inconclusive``
with that reason. Where a finding spans tasks (or architectures), the reason also says
per task what was decided and what was untested.

Fragile verdicts: each sub-claim's ``flip_confidence`` is the confidence level at which
its interval touches its edge, where its status changes
(:func:`statelayers.report.stats.flip_confidence`); it is ``fragile`` when that lies in
:data:`FRAGILE_BAND` (90-99 %, fixed before any run was read with it), i.e. its status
at 90 % differs from its status at 99 %. A verdict is fragile when it differs at either
end of the band from the verdict at the configured confidence: another machine's
summation order may move it.

Only models that learned: a run has learned its task when its test token accuracy at
the training length is at least :data:`LEARNED_ACCURACY` (0.95; fixed before the runs
trained to a criterion were looked at). Findings 2-5 are about how a model that solves
a task encodes it, so they use only runs that learned the task they are about (finding
1, behaviour, keeps every run; 6 and 7 are not gated). A sub-claim that needs an
architecture on a task where fewer than :data:`MIN_LEARNED_SEEDS` seeds learned it,
and at least one did not, is untested (status ``unlearned``) with the reason "<arch> did
not learn <task> (accuracy <x> at seed <s>, ...)"; its finding is ``inconclusive`` unless
another of its sub-claims is contradicted on the runs that learned. Finding 5 pools
architectures: it uses the learned runs of the task, names the runs it left out, and is
untested only when the runs of the task that learned it cover fewer than
:data:`MIN_LEARNED_SEEDS` seeds.

Layer numbering: block ``b`` here (layer ``b >= 1``; 0 is the embedding) is the
paper's ``L{b-1}``. Sub-claims per finding:

1. Behaviour (token accuracy, mean over evaluation lengths): LSTM and GRU reach >= 0.99
   at every length on parity and s3; on dyck, recurrent (mean of LSTM, GRU) beats
   Mamba, Mamba-2 and the Transformer; on s3 and on parity, recurrent > SSM (mean of
   Mamba, Mamba-2) > Transformer.
2. Prefix tasks (parity, s3; probes of the training label): for Mamba and LSTM the
   profile reaches 95 % of the best block within the last block (``crossing_95 -
   n_blocks >= 0`` within half a block: the crossing lies past ``n_blocks - 0.5``), and
   their late concentration exceeds the Transformer's.
3. Dyck: the Transformer reaches 95 % by block 2 (paper L0-L1): ``2 - crossing_95 >= 0``
   within half a block; Mamba and LSTM reach it more than half a block later.
4. S3 follows Parity: for every architecture, the late concentration on s3 is closer to
   parity's than to dyck's (distance to dyck minus distance to parity > 0); all five
   families must be in the run.
5. Necessity: erasing the probe directions at each run's best probe layer costs more
   accuracy than random subspaces of the same rank at that layer, at the training length
   and at the longest erasure length, per task (units: architecture x seed).
6. Pretrained scale (models named ``pythia-160m`` and ``mamba-130m`` in the config;
   dyck; units: fine-tuning seeds; erasure of the probe directions at the training
   length). Pythia-160M: the largest drop over the middle third of its blocks exceeds
   the drop at its last block, and its best probe block lies after its most necessary
   block (both peaks between whole blocks: :func:`statelayers.report.stats.peak_position`).
   Mamba-130M: its last block's probe accuracy is within 0.05 of its best block,
   erasing the probe directions there costs practically nothing (the paper's < 0.002
   is below the erasure margin, so: drop <= 0 within it), and patching the input of
   its last block (layer ``n_blocks - 1``) from the clean run into the corrupted one at
   the middle half of the positions recovers >= 0.9 of the logit difference (the
   thresholds within their margins: 0.05 + 0.02 of probe accuracy, 0.9 - 0.02; the output
   of the last block at an earlier position cannot reach the metric position; its input
   can, through the block's recurrence).
7. Conv1D (the ``mamba_noconv`` variant trained without it; :mod:`statelayers.report.conv1d`):
   the accuracy lost without Conv1D (Mamba minus variant, percentage points of token
   accuracy averaged over evaluation lengths, paired by seed) is > 0 on s3 and on parity,
   and larger on s3 than on dyck. Paired t-tests with Holm's correction are reported
   beside it in ``conv1d_summary.csv``.

Findings 1-5 concern the five families; Conv1D-ablated models enter finding 7 only.
The whole-block positions (``first_layer_95``, argmax blocks) are reported beside the
continuous ones as rows that decide nothing (``decides`` false in ``subclaims.csv``).

Probes that stopped at ``probes.max_iter`` before converging: a run with such a label
probe at the fit length is left out of the profile findings (2-4), named like a run
that did not learn, and ``claims.md`` counts every run's unconverged probes.

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
from statelayers.report.stats import (
    INTERVAL_KIND,
    IntervalConfig,
    flip_confidence,
    mean_ci,
    peak_position,
    profile_shapes,
    rounding_sd,
    seeds_to_decide,
)

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
FRAGILE_BAND = (0.90, 0.99)
"""Confidence levels between which a status or verdict that changes is fragile (module docstring)."""
PLANNING_SEEDS = 1000
"""The planning figure says "more than" this many seeds rather than searching further."""


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
LAYER_POSITION = Quantity("layer position", 0.5)
"""Half a block, for a continuous position (``crossing_95``, a peak between blocks): the
paper's words place a state in a block, so less than half a block is no difference."""
LAYER_DIFFERENCE = Quantity("layer position difference", 0.5)
""":data:`LAYER_POSITION`'s margin for the difference of two positions."""
WHOLE_BLOCK_POSITION = Quantity("whole-block position", 0.5, sd_floor=rounding_sd(1.0))
"""A position in whole blocks (reported only): its zero spread at agreeing seeds is not
certainty, so its sd is floored at the rounding error's, ``1/√12`` block."""
WHOLE_BLOCK_DIFFERENCE = Quantity("whole-block position difference", 0.5, sd_floor=rounding_sd(1.0, terms=2))
""":data:`WHOLE_BLOCK_POSITION` for the difference of two positions (two rounding errors)."""
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
"""Every margin of a deciding quantity (docs/methods.md lists them with their reasons)."""

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
    """Why it cannot be tested: the models it needs that did not learn their task."""
    note: str = ""
    """Said beside the measured numbers (runs left out of a pooled sub-claim)."""
    group: str = ""
    """The part of its finding it belongs to (a task, or an architecture), for the reason."""
    decides: bool = True
    """False: reported beside the verdict (a whole-block position), deciding nothing."""

    @property
    def edge(self) -> float:
        """The value its interval must clear: the bound moved by the margin."""
        return (
            self.bound - self.quantity.margin
            if self.kind == "at_least"
            else self.bound + self.quantity.margin
        )

    def status_at(self, low: float, high: float) -> str:
        """supported, contradicted or unresolved for an interval [low, high]."""
        edge = self.edge
        if self.kind == "at_most":
            return "supported" if high < edge else "contradicted" if low > edge else "unresolved"
        return "supported" if low > edge else "contradicted" if high < edge else "unresolved"

    def evaluate(self, config: IntervalConfig) -> dict:
        """Status, reason text and the numbers behind it (a row of ``subclaims.csv``).
        A sub-claim blocked by runs that did not learn still shows its interval over the
        runs that did."""
        per_seed = self.per_seed.dropna()
        values = per_seed.to_numpy(dtype=float)
        seeds = (
            per_seed.index.get_level_values("seed").nunique()
            if "seed" in per_seed.index.names
            else len(values)
        )
        margin = self.quantity.margin
        nan = float("nan")
        row = {
            "subclaim": self.name,
            "group": self.group,
            "decides": self.decides,
            "kind": self.kind,
            "bound": self.bound,
            "quantity": self.quantity.name,
            "margin": margin,
            "interval": f"{config.confidence:.0%} {INTERVAL_KIND}",
            "n": len(values),
            "seeds": seeds,
            "mean": nan,
            "ci_low": nan,
            "ci_high": nan,
            "sd": nan,
            "flip_confidence": nan,
            "fragile": False,
            "seeds_to_decide": "",
        }
        numbers = ""
        if len(values):
            mean, low, high = mean_ci(values, config, self.quantity.sd_floor)
            sd = max(float(values.std(ddof=1)), self.quantity.sd_floor) if len(values) > 1 else nan
            row |= {"mean": mean, "ci_low": low, "ci_high": high, "sd": sd}
            numbers = (
                f"{mean:+.3f} [{low:+.3f}, {high:+.3f}] (n={len(values)}) "
                f"vs {SIGNS[self.kind]} {self.bound:+.3f}, margin {margin:g}"
            )
        if self.unlearned:
            reason = "; ".join(self.unlearned)
            text = f"{self.name}: untested, {reason}" + (f" (learned runs: {numbers})" if numbers else "")
            return row | {"status": "unlearned", "text": text, "reason": reason}
        if not numbers:
            return row | {"status": "missing", "text": f"{self.name}: no data", "reason": "no data"}
        text = f"{self.name}: {numbers}" + (f" ({self.note})" if self.note else "")
        distance = row["mean"] - self.edge
        if len(values) > 1:
            row["seeds_to_decide"] = _planning(
                seeds_to_decide(distance, row["sd"], config, MIN_SEEDS, PLANNING_SEEDS)
            )
        if seeds < MIN_SEEDS:
            return row | {"status": "unresolved", "text": f"{text}: {FEWER_SEEDS}", "reason": FEWER_SEEDS}
        status = self.status_at(row["ci_low"], row["ci_high"])
        flip = flip_confidence(distance, row["sd"], len(values))
        row |= {"flip_confidence": flip, "fragile": FRAGILE_BAND[0] < flip <= FRAGILE_BAND[1]}
        if status != "unresolved":
            row["seeds_to_decide"] = ""
        return row | {"status": status, "text": text, "reason": ""}

    def status(self, config: IntervalConfig) -> tuple[str, str]:
        result = self.evaluate(config)
        return result["status"], result["text"]


def _planning(seeds: int | None) -> str:
    """The planning figure's words (:func:`statelayers.report.stats.seeds_to_decide`)."""
    if seeds is None:
        return f"more than {PLANNING_SEEDS} seeds"
    return f"{seeds} seeds"


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


def _label(statuses: list[str]) -> str:
    """A finding's verdict from its deciding sub-claims' statuses (the conjunction)."""
    if "contradicted" in statuses:
        return "not reproduced"
    if statuses and all(status == "supported" for status in statuses):
        return "reproduced"
    return "inconclusive"


def _unresolved(result: dict) -> str:
    """An unresolved sub-claim and what would decide it."""
    why = f"{result['reason']}; " if result["reason"] else ""
    planning = result["seeds_to_decide"]
    if not planning:
        return f"{result['subclaim']} ({why}no spread to plan from)"
    return (
        f"{result['subclaim']} ({why}planning figure: {planning} at its observed mean and sd would decide it)"
    )


def _by_group(claims: list[SubClaim], results: list[dict]) -> str:
    """Per task (or architecture) of a finding that spans several: what was decided and what was untested."""
    groups = list(dict.fromkeys(claim.group for claim in claims))
    if len(groups) < 2:
        return ""
    parts = []
    for group in groups:
        mine = [(c, r) for c, r in zip(claims, results) if c.group == group]
        said = []
        for status in ("contradicted", "supported", "unresolved"):
            names = [r["subclaim"] for _, r in mine if r["status"] == status]
            if names:
                said.append(f"{status}: " + ", ".join(names))
        untested = [u.split(" (")[0] for c, r in mine if r["status"] == "unlearned" for u in c.unlearned]
        if untested:
            said.append("untested: " + ", ".join(dict.fromkeys(untested)))
        parts.append(f"{group}: " + "; ".join(said))
    return "by part: " + " | ".join(parts)


@dataclass
class Finding:
    number: int
    claims: list[SubClaim] = field(default_factory=list)
    missing: str | None = None

    @property
    def deciding(self) -> list[SubClaim]:
        return [claim for claim in self.claims if claim.decides]

    def statuses(self, config: IntervalConfig) -> str:
        """Each sub-claim's numbers and status, for reporting beside a verdict."""
        if self.missing:
            return self.missing
        results = [claim.status(config) for claim in self.deciding]
        return " | ".join(text if status == "unlearned" else f"{text}: {status}" for status, text in results)

    def verdict(self, config: IntervalConfig) -> dict:
        """The verdict row of ``claims.csv``: verdict, reason, the sub-claims that decide it,
        whether it is fragile, the measured numbers and what it rests on."""
        empty = {"deciding": "", "fragile": False, "fragility": "", "measured": "", "rests_on": ""}
        if self.missing:
            return {"verdict": "inconclusive", "reason": self.missing, **empty}
        claims = self.deciding
        if not claims:
            return {
                "verdict": "inconclusive",
                "reason": "no sub-claim could be formed from this run",
                **empty,
            }
        results = [claim.evaluate(config) for claim in claims]
        statuses = [result["status"] for result in results]
        verdict = _label(statuses)
        untested = list(dict.fromkeys(reason for claim in claims for reason in claim.unlearned))
        unresolved = [r for r in results if r["status"] in ("unresolved", "missing")]
        if verdict == "not reproduced":
            contradicted = sorted(
                (r for r in results if r["status"] == "contradicted"), key=lambda r: -r["flip_confidence"]
            )
            deciding = [r["subclaim"] for r in contradicted]
            reason = "contradicted on the runs that learned: " + "; ".join(deciding)
            if untested:
                reason += ". Untested: " + "; ".join(untested)
        elif verdict == "reproduced":
            weakest = min(results, key=lambda r: r["flip_confidence"])
            deciding = [weakest["subclaim"]]
            reason = f"every sub-claim supported (nearest to changing: {weakest['subclaim']})"
        else:
            deciding = [
                r["subclaim"] for r in results if r["status"] in ("unresolved", "missing", "unlearned")
            ]
            said = []
            if untested:
                said.append("untested: " + "; ".join(untested))
            few = [r["subclaim"] for r in unresolved if r["reason"] == FEWER_SEEDS]
            if few and len(few) == len(unresolved):
                said.append(f"{FEWER_SEEDS}: " + "; ".join(_unresolved(r) for r in unresolved))
            elif unresolved:
                said.append(
                    "intervals do not clear the margin: " + "; ".join(_unresolved(r) for r in unresolved)
                )
            reason = ". ".join(said)
        parts = _by_group(claims, results) if verdict != "reproduced" else ""
        if parts:
            reason += f". {parts}"
        band = {
            level: _label([claim.evaluate(IntervalConfig(level))["status"] for claim in claims])
            for level in FRAGILE_BAND
        }
        fragile = any(label != verdict for label in band.values())
        fragility = ", ".join(f"{label} at {level:.0%}" for level, label in band.items()) if fragile else ""
        return {
            "verdict": verdict,
            "reason": reason,
            "deciding": "; ".join(deciding),
            "fragile": fragile,
            "fragility": fragility,
            "measured": " | ".join(result["text"] for result in results),
            "rests_on": _rests_on(results),
        }

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
        seed-0 run reached :data:`LEARNED_ACCURACY` on validation, or that none did within the
        longest cap tried."""
        if self.learnability is None:
            return ""
        rows = self.learnability[(self.learnability["arch"] == arch) & (self.learnability["task"] == task)]
        if rows.empty:
            return ""
        reached = rows["steps_to_95"].dropna()
        if len(reached):
            return f"it reached validation {LEARNED_ACCURACY} at step {int(reached.min())} of a seed-0 run"
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
                    group=name,
                )
            )
    dyck = task(mean_acc, "dyck")
    for other in (*SSM, "transformer"):
        finding.claims.append(
            SubClaim(
                f"dyck recurrent - {other}",
                _by_seed(dyck, RECURRENT, "token_accuracy") - _by_seed(dyck, other, "token_accuracy"),
                TOKEN_ACCURACY,
                group="dyck",
            )
        )
    for name in ("s3", "parity"):
        frame = task(mean_acc, name)
        recurrent, ssm, transformer = (
            _by_seed(frame, a, "token_accuracy") for a in (RECURRENT, SSM, "transformer")
        )
        finding.claims += [
            SubClaim(f"{name} recurrent - SSM", recurrent - ssm, TOKEN_ACCURACY, group=name),
            SubClaim(f"{name} SSM - transformer", ssm - transformer, TOKEN_ACCURACY, group=name),
        ]
    return finding


def profile_findings(
    probes: pd.DataFrame, learned: Learned, profile: str = "probe_accuracy"
) -> list[Finding]:
    """Findings 2-4, from the probe profiles of the usable runs: of the probe accuracy, or
    of one of its gains over a baseline (``profile`` in
    :data:`statelayers.report.stats.PROFILE_GAINS`, reported beside the verdicts).
    Positions decide on ``crossing_95``; ``first_layer_95`` is reported beside it."""
    n_blocks = int(probes["layer"].max())
    archs, tasks = set(probes["arch"]), set(probes["task"])
    shapes = profile_shapes(probes)
    shapes = learned.keep(shapes[shapes["target"] == "labels"])
    prefix = "" if profile == "probe_accuracy" else f"{profile}_"
    task = lambda name: shapes[shapes["task"] == name]  # noqa: E731
    late = lambda name, arch: _by_seed(task(name), arch, f"{prefix}late_concentration")  # noqa: E731
    at = lambda name, arch, stat: _by_seed(task(name), arch, f"{prefix}{stat}")  # noqa: E731

    def claim(
        name: str,
        per_seed: pd.Series,
        quantity: Quantity,
        kind: str,
        needs: list[tuple[str, str]],
        group: str,
    ) -> SubClaim:
        return SubClaim(name, per_seed, quantity, kind=kind, unlearned=learned.blocking(needs), group=group)

    def position(label: str, value, difference: bool, kind: str, needs: list[tuple[str, str]], group: str):
        """A layer-position sub-claim on the 95 % crossing, which decides, and the same on
        the whole block, reported beside it. ``label`` names the statistic ``{}``;
        ``value(stat)`` is the per-seed quantity of a shape column."""
        decided = claim(
            label.format("95 % crossing"),
            value("crossing_95"),
            LAYER_DIFFERENCE if difference else LAYER_POSITION,
            kind,
            needs,
            group,
        )
        whole = WHOLE_BLOCK_DIFFERENCE if difference else WHOLE_BLOCK_POSITION
        reported = claim(
            label.format("first block at 95 %"), value("first_layer_95"), whole, kind, needs, group
        )
        reported.decides = False
        return [decided, reported]

    jump = Finding(2)
    jump.missing = _requires(archs, {"mamba", "lstm", "transformer"}, "architectures") or _requires(
        tasks, {"parity", "s3"}, "tasks"
    )
    if not jump.missing:
        for name in ("parity", "s3"):
            for arch in ("mamba", "lstm"):
                jump.claims += position(
                    f"{name} {arch} {{}} - last block",
                    lambda stat, name=name, arch=arch: at(name, arch, stat) - n_blocks,
                    False,
                    "at_least",
                    [(arch, name)],
                    name,
                )
                jump.claims.append(
                    claim(
                        f"{name} {arch} - transformer late concentration",
                        late(name, arch) - late(name, "transformer"),
                        PROBE_ACCURACY,
                        "greater",
                        [(arch, name), ("transformer", name)],
                        name,
                    )
                )

    dyck = Finding(3)
    dyck.missing = _requires(archs, {"mamba", "lstm", "transformer"}, "architectures") or _requires(
        tasks, {"dyck"}, "tasks"
    )
    if not dyck.missing:
        dyck.claims += position(
            "dyck transformer: 2 - {}",
            lambda stat: 2 - at("dyck", "transformer", stat),
            False,
            "at_least",
            [("transformer", "dyck")],
            "transformer",
        )
        for arch in ("mamba", "lstm"):
            dyck.claims += position(
                f"dyck {arch} - transformer {{}}",
                lambda stat, arch=arch: at("dyck", arch, stat) - at("dyck", "transformer", stat),
                True,
                "greater",
                [(arch, "dyck"), ("transformer", "dyck")],
                arch,
            )

    follows = Finding(4)
    follows.missing = _requires(archs, set(FAMILIES), "architectures") or _requires(
        tasks, {"parity", "s3", "dyck"}, "tasks"
    )
    if not follows.missing:
        for arch in FAMILIES:
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
                    arch,
                )
            )
    return [jump, dyck, follows]


def necessity_finding(
    erasures: pd.DataFrame | None, readability: pd.DataFrame | None, learned: Learned
) -> Finding:
    """Finding 5, pooled over the architectures' runs that learned each task."""
    finding = Finding(5)
    if erasures is None or readability is None or erasures.empty:
        finding.missing = "erasures stage did not run"
        return finding
    best = readability[readability["method"] == "probe"][["arch", "task", "seed", "best_probe_layer"]]
    at_best = erasures.merge(best, on=["arch", "task", "seed"])
    at_best = at_best[at_best["layer"] == at_best["best_probe_layer"]]
    keys = ["arch", "task", "seed", "eval_length"]
    probe = at_best[at_best["method"] == "probe"].set_index(keys)
    random = at_best[at_best["method"] == "random"].groupby([*keys, "rank"])["drop"].mean()
    matched_random = random.reindex(
        pd.MultiIndex.from_arrays([*(probe.index.get_level_values(k) for k in keys), probe["rank"]])
    ).to_numpy()
    excess = (probe["drop"] - matched_random).rename("excess").reset_index()
    excess = excess[excess["arch"].isin(FAMILIES)]  # Conv1D-ablated models enter finding 7 only
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
                    group=name,
                )
            )
    return finding


def pretrained_finding(
    probes: pd.DataFrame | None, erasures: pd.DataFrame | None, patching: pd.DataFrame | None
) -> Finding:
    finding = Finding(6)
    if probes is None or erasures is None:
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
    erased = erasures[
        (erasures["method"] == "probe")
        & (erasures["task"] == "dyck")
        & (erasures["eval_length"] == fit_length)
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
            "pythia-160m: best probe peak - most necessary peak",
            _peaks(accuracy.drop(columns=0)) - _peaks(drop.drop(columns=0)),
            LAYER_DIFFERENCE,
        ),
        SubClaim(
            "pythia-160m: best probe block - most necessary block",
            accuracy.drop(columns=0).idxmax(axis=1) - drop.drop(columns=0).idxmax(axis=1),
            WHOLE_BLOCK_DIFFERENCE,
            decides=False,
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


def _peaks(by_layer: pd.DataFrame) -> pd.Series:
    """Per seed (row), the position of the largest value between whole blocks (columns)."""
    return by_layer.apply(peak_position, axis=1)


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
    """``claims.csv``: one row per finding (:data:`CLAIM_COLUMNS`): verdict, reason, the
    sub-claims that decide it (``deciding``), whether it is fragile and its verdicts at the
    ends of :data:`FRAGILE_BAND` (``fragility``), measured numbers, what it rests on, the
    gain and ungated readings, the paper's numbers, the run's scale."""
    runs: pd.DataFrame
    """Per run: arch, task, seed, accuracy, learned, unconverged (probes stopped at
    ``max_iter``), labels_converged."""
    subclaims: pd.DataFrame
    """``subclaims.csv``: one row per (finding, reading, sub-claim) (:data:`SUBCLAIM_COLUMNS`):
    group (the task or architecture it is about), decides (false: reported only), kind,
    bound, quantity, margin, interval kind, n (values: seeds, or architecture x seed units
    when pooled), seeds, mean, ci_low, ci_high, sd, status (supported, contradicted,
    unresolved, unlearned: untested, missing), reason, flip_confidence (the confidence at
    which its status changes), fragile (that lies in :data:`FRAGILE_BAND`), seeds_to_decide
    (the planning figure of an unresolved one)."""


CLAIM_COLUMNS = [
    "finding", "verdict", "reason", "deciding", "fragile", "fragility", "measured", "rests_on",
    "on_gains", "ungated", "paper", "scale",
]  # fmt: skip
SUBCLAIM_COLUMNS = [
    "finding", "reading", "subclaim", "group", "decides", "kind", "bound", "quantity", "margin",
    "interval", "n", "seeds", "mean", "ci_low", "ci_high", "sd", "status", "reason",
    "flip_confidence", "fragile", "seeds_to_decide",
]  # fmt: skip


def check_claims(
    behaviour: pd.DataFrame,
    probes: pd.DataFrame,
    erasures: pd.DataFrame | None,
    readability: pd.DataFrame | None,
    scale: str,
    train_length: int,
    config: IntervalConfig = IntervalConfig(),
    conv1d: pd.DataFrame | None = None,
    pretrained_probes: pd.DataFrame | None = None,
    pretrained_erasures: pd.DataFrame | None = None,
    patching: pd.DataFrame | None = None,
    learnability: pd.DataFrame | None = None,
) -> ClaimsCheck:
    """Verdicts on findings 1-7 and every sub-claim's numbers, in three readings: ``gated``
    (the verdicts), ``on_gains`` (2-4 on the gain profile) and ``ungated`` (2-5 on every run).

    ``train_length`` is where :func:`learned_runs` reads whether a run learned its task;
    ``learnability`` (the rows of ``benchmarks/learnability*.csv``) what an untested pair needs.
    """
    runs = learned_runs(behaviour, train_length)
    converged = runs.merge(
        unconverged_probes(probes)[["arch", "task", "seed", "labels_converged"]],
        on=["arch", "task", "seed"],
        how="left",
    ).fillna({"labels_converged": True})
    learned, everyone = Learned(runs, learnability), Learned(runs.assign(learned=True), learnability)
    profiled = Learned(converged, learnability)
    profiled_everyone = Learned(converged.assign(learned=True), learnability)
    findings = [
        behaviour_finding(behaviour),
        *profile_findings(probes, profiled),
        necessity_finding(erasures, readability, learned),
        pretrained_finding(pretrained_probes, pretrained_erasures, patching),
        conv1d_finding(conv1d),
    ]
    readings = {
        "on_gains": profile_findings(probes, profiled, GAIN_PROFILE) if GAIN_PROFILE in probes else [],
        "ungated": [
            *profile_findings(probes, profiled_everyone),
            necessity_finding(erasures, readability, everyone),
        ],
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
        ],
        columns=CLAIM_COLUMNS,
    )
    rows = [row for f in findings for row in f.rows(config, "gated")]
    rows += [row for name, found in readings.items() for f in found for row in f.rows(config, name)]
    subclaims = pd.DataFrame(rows, columns=[*SUBCLAIM_COLUMNS, "text"]).drop(columns="text")
    counts = unconverged_probes(probes)[["arch", "task", "seed", "unconverged"]]
    runs = converged.merge(counts, on=["arch", "task", "seed"], how="left").fillna({"unconverged": 0})
    return ClaimsCheck(verdicts, runs, subclaims)


def claims_markdown(check: ClaimsCheck, train_length: int) -> str:
    """The claims table (fragile verdicts marked), what each verdict rests on, every
    sub-claim with its interval, margin, n and distance from changing status, the other
    readings, and which runs learned their task and how many of their probes converged."""
    claims = check.verdicts
    lines = ["| # | verdict | deciding | reason | rests on | paper |", "|---|---|---|---|---|---|"]
    lines += [
        f"| {r.finding} | **{r.verdict}**{f' (fragile: {r.fragility})' if r.fragile else ''} "
        f"| {r.deciding} | {r.reason} | {r.rests_on} | {r.paper} |"
        for r in claims.itertuples()
    ]
    kind = check.subclaims["interval"].iloc[0] if len(check.subclaims) else INTERVAL_KIND
    subclaims = [
        f"| # | sub-claim | n | mean [{kind} CI] | claimed | margin | status | changes status at |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in check.subclaims[check.subclaims["reading"] == "gated"].itertuples():
        interval = f"{r.mean:+.3f} [{r.ci_low:+.3f}, {r.ci_high:+.3f}]" if pd.notna(r.mean) else ""
        claimed = f"{SIGNS[r.kind]} {r.bound:+.3f}"
        status = f"{r.status} ({r.reason})" if r.reason else r.status
        if not r.decides:
            status += ", reported only"
        flip = (
            f"{r.flip_confidence:.1%}" + (" **fragile**" if r.fragile else "")
            if pd.notna(r.flip_confidence)
            else ""
        )
        if r.seeds_to_decide:
            flip += f"{'; ' if flip else ''}decided at {r.seeds_to_decide} (planning figure)"
        subclaims.append(
            f"| {r.finding} | {r.subclaim} | {r.n} | {interval} | {claimed} "
            f"| {r.margin:g} ({r.quantity}) | {status} | {flip} |"
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
    runs = [
        "| arch | task | seeds learned | test token accuracy at each seed | probes stopped at max_iter |",
        "|---|---|---|---|---|",
    ]
    for (arch, task), group in check.runs.groupby(["arch", "task"], sort=False):
        group = group.sort_values("seed")
        accuracy = ", ".join(f"{a:.3f}" for a in group["accuracy"])
        unconverged = ", ".join(str(int(n)) for n in group["unconverged"])
        learned = f"{int(group['learned'].sum())} of {len(group)}"
        runs.append(f"| {arch} | {task} | {learned} | {accuracy} | {unconverged} |")
    scale = claims["scale"].iloc[0]
    margins = ", ".join(f"{name} {margin:g}" for name, margin in MARGINS.items())
    low, high = FRAGILE_BAND
    return "\n".join(
        [
            f"# Claims check\n\nScale: {scale}\n",
            (
                f"Intervals: {kind} over seeds; no sub-claim is decided from fewer than "
                f"{MIN_SEEDS} seeds. Margins of practical equivalence: {margins}. A verdict "
                f"marked fragile differs at {low:.0%} or {high:.0%} confidence; a sub-claim "
                f"marked fragile changes status between them.\n"
            ),
            *lines,
            "\n## Sub-claims (verdicts)\n",
            *subclaims,
            *sections,
            (
                f"\n## Runs that learned their task (test token accuracy at L = {train_length} "
                f">= {LEARNED_ACCURACY})\n"
            ),
            "Findings 2-5 use only these runs; findings 2-4 also leave out runs whose label "
            "probes stopped at max_iter (per seed: every probe of the run that did, at the fit length).\n",
            *runs,
            "",
        ]
    )
