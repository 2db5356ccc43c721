"""The claim engine: quantities and their margins, sub-claims, their statuses, rooms,
the conjunction that makes a verdict, and its fragility.

A sub-claim is a quantity computed per seed (differences between architectures paired by
seed) whose Student-t interval over seeds (:mod:`statelayers.report.stats`) is compared
with a bound and a margin of practical equivalence (:class:`Quantity`). Its kind:

- ``greater`` ("A beats B": A - B > 0): *supported* when the whole interval lies above
  ``bound + margin``; *contradicted* when it lies below ``bound + margin`` (inside the
  margin: no practical difference, or beyond it on the other side);
- ``at_least`` ("accuracy >= 0.99"): supported above ``bound - margin``, contradicted
  below it, so a threshold is met within its margin;
- ``at_most`` (the mirror: "an erasure costs practically nothing", drop <= 0);

and *unresolved* otherwise. No sub-claim is decided from fewer than :data:`MIN_SEEDS`
per-seed values.

**Room.** Contradicting a ``greater`` sub-claim is a non-superiority test: it says
something only where the quantity could have cleared its edge. Every sub-claim carries
a *room*, the largest value its quantity could take given the data, measured from its
bound (the finding rules say how, per quantity; :mod:`statelayers.report.claims.findings`):
for "A beats B" on accuracy ``1 - mean(B)``; for a late-concentration difference the
spread the two profiles leave; for a layer position the blocks of the profile below its
ceiling; for a threshold the quantity's whole range. A sub-claim whose room is below
:data:`ROOM_FACTOR` times its margin gets the status ``no room``: it can neither support
nor contradict, so it decides no verdict, and its reason says what was at the ceiling or
flat and which measurement has room. The factor two asks that a value could clear the
edge (bound + margin) by as much again as the margin, so that an interval of the
margin's width can lie wholly beyond it.

A finding is the conjunction of its deciding sub-claims (:func:`label`): ``not
reproduced`` when any is contradicted; ``reproduced`` only when every one is supported;
``inconclusive`` otherwise (unresolved, untested, no room or missing).

Fragility: a sub-claim's ``flip_confidence`` is the confidence level at which its
interval touches its edge (:func:`statelayers.report.stats.flip_confidence`); it is
fragile when that lies in :data:`FRAGILE_BAND`. A verdict is fragile when its verdict at
either end of the band differs from the one at the configured confidence.

The room rule, the factor two, the sequence-accuracy behaviour and the gain profile
were fixed after the three-seed runs of the earlier rules had been read (their verdicts
were "not reproduced" on findings 1-5) and before any run was computed with them; the
conjunction rule and the 95 % crossing, likewise, after an earlier run had shown
findings 2-4 inconclusive. ``results/robustness.csv`` shows every verdict under the
analysis choices the paper leaves open (:mod:`statelayers.report.claims.check`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import pandas as pd

from statelayers.report.stats import (
    INTERVAL_KIND,
    IntervalConfig,
    flip_confidence,
    mean_ci,
    rounding_sd,
    seeds_to_decide,
)

MIN_SEEDS = 3
"""Per-seed values a sub-claim needs before it is decided: fewer say too little about seed variance."""
FEWER_SEEDS = f"fewer than {MIN_SEEDS} seeds"
SIGNS = {"greater": ">", "at_least": ">=", "at_most": "<="}
"""The sub-claim kinds and how each reads."""
FRAGILE_BAND = (0.90, 0.99)
"""Confidence levels between which a status or verdict that changes is fragile."""
PLANNING_SEEDS = 1000
"""The planning figure says "more than" this many seeds rather than searching further."""
ROOM_FACTOR = 2.0
"""A sub-claim needs room of at least this many margins to decide anything (module docstring)."""
NO_ROOM = "no room"


@dataclass(frozen=True)
class Quantity:
    """A kind of per-seed quantity, with its margin of practical equivalence."""

    name: str
    margin: float
    """Differences smaller than this are no difference for any finding (same units as the values)."""
    span: float | None = None
    """The width of the quantity's whole range (1 for an accuracy): a threshold's room.
    None where the room depends on the data alone (a layer position)."""
    sd_floor: float = 0.0
    """Smallest standard deviation of the values (rounding to a grid:
    :func:`statelayers.report.stats.rounding_sd`)."""


TOKEN_ACCURACY = Quantity("token accuracy", 0.01, span=1.0)
"""One percentage point: below any behavioural difference a finding turns on (the paper's
orderings differ by several points; its non-significant Conv1D effect on Dyck is 4 points)."""
SEQUENCE_ACCURACY = Quantity("sequence accuracy", 0.01, span=1.0)
"""One percentage point of sequences with every token right: the same point as
:data:`TOKEN_ACCURACY`, on the measure that stays off the ceiling at long lengths."""
TOKEN_ACCURACY_PP = Quantity("token accuracy, percentage points", 1.0, span=100.0)
""":data:`TOKEN_ACCURACY` in the percentage points finding 7 is stated in."""
PROBE_ACCURACY = Quantity("probe accuracy", 0.02, span=1.0)
"""Two percentage points of probe accuracy, for probe accuracies and the profile shapes made of
them: about twice a probe's own sampling error on its held-out tokens, and a fifth of the
smallest profile difference the paper describes (Transformer 76 against Mamba 60 % at L1)."""
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
ERASURE_DROP = Quantity("erasure drop", 0.01, span=1.0)
"""One percentage point of token accuracy lost to an erasure: the paper's erasures cost
tens of points where they matter."""
RECOVERY = Quantity("patching recovery", 0.02, span=1.0)
"""Two percent of the clean - corrupted logit difference (the paper's recoveries: 97-98 %)."""
MARGINS = {
    q.name: q.margin
    for q in (
        TOKEN_ACCURACY,
        SEQUENCE_ACCURACY,
        TOKEN_ACCURACY_PP,
        PROBE_ACCURACY,
        LAYER_POSITION,
        LAYER_DIFFERENCE,
        ERASURE_DROP,
        RECOVERY,
    )
}
"""Every margin of a deciding quantity (docs/methods.md lists them with their reasons)."""


@dataclass
class SubClaim:
    name: str
    per_seed: pd.Series
    quantity: Quantity
    bound: float = 0.0
    kind: str = "greater"
    """``greater``, ``at_least`` or ``at_most`` (module docstring)."""
    room: float | None = None
    """The largest value the quantity could take given the data, from its bound (module
    docstring); None takes the quantity's span (a threshold)."""
    room_note: str = ""
    """What was at the ceiling or flat, and which measurement has room: said when there is none."""
    plain: str = ""
    """The sub-claim in plain words, for the README."""
    unlearned: tuple[str, ...] = ()
    """Why it cannot be tested: the models it needs that did not learn their task."""
    note: str = ""
    """Said beside the measured numbers (runs left out of a pooled sub-claim)."""
    group: str = ""
    """The part of its finding it belongs to (a task, or an architecture), for the reason."""
    decides: bool = True
    """False: reported beside the verdict, deciding nothing."""

    @property
    def edge(self) -> float:
        """The value its interval must clear: the bound moved by the margin."""
        return (
            self.bound - self.quantity.margin
            if self.kind == "at_least"
            else self.bound + self.quantity.margin
        )

    @property
    def room_value(self) -> float:
        if self.room is not None:
            return float(self.room)
        if self.quantity.span is None:
            raise ValueError(f"{self.name}: a {self.quantity.name} sub-claim needs its room from the data")
        return self.quantity.span

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
        room = self.room_value
        row = {
            "subclaim": self.name,
            "group": self.group,
            "decides": self.decides,
            "kind": self.kind,
            "bound": self.bound,
            "quantity": self.quantity.name,
            "margin": margin,
            "room": room,
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
            "plain": self.plain,
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
        if math.isnan(room) or room < ROOM_FACTOR * margin:
            reason = f"room {room:.3g} < {ROOM_FACTOR:g} x margin" + (f": {self.room_note}" if self.room_note else "")
            return row | {"status": NO_ROOM, "text": f"{text}: {NO_ROOM}, {reason}", "reason": reason}
        distance = row["mean"] - self.edge
        if len(values) > 1:
            row["seeds_to_decide"] = planning(
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


def planning(seeds: int | None) -> str:
    """The planning figure's words (:func:`statelayers.report.stats.seeds_to_decide`)."""
    if seeds is None:
        return f"more than {PLANNING_SEEDS} seeds"
    return f"{seeds} seeds"


def rests_on(rows: list[dict]) -> str:
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


def label(statuses: list[str]) -> str:
    """A finding's verdict from its deciding sub-claims' statuses (the conjunction)."""
    if "contradicted" in statuses:
        return "not reproduced"
    if statuses and all(status == "supported" for status in statuses):
        return "reproduced"
    return "inconclusive"


def _unresolved(result: dict) -> str:
    """An unresolved sub-claim and what would decide it."""
    why = f"{result['reason']}; " if result["reason"] else ""
    planned = result["seeds_to_decide"]
    if not planned:
        return f"{result['subclaim']} ({why}no spread to plan from)"
    return f"{result['subclaim']} ({why}planning figure: {planned} at its observed mean and sd would decide it)"


def _by_group(claims: list[SubClaim], results: list[dict]) -> str:
    """Per task (or architecture) of a finding that spans several: what was decided and what was untested."""
    groups = list(dict.fromkeys(claim.group for claim in claims))
    if len(groups) < 2:
        return ""
    parts = []
    for group in groups:
        mine = [(c, r) for c, r in zip(claims, results) if c.group == group]
        said = []
        for status in ("contradicted", "supported", "unresolved", NO_ROOM):
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

    def verdict(self, config: IntervalConfig) -> dict:
        """The verdict row of ``claims.csv``: verdict, reason, the sub-claims that decide it
        (and in plain words), whether it is fragile, the measured numbers and what it rests on."""
        empty = {"deciding": "", "decided_by": "", "fragile": False, "fragility": "", "measured": "", "rests_on": ""}
        if self.missing:
            return {"verdict": "inconclusive", "reason": self.missing, **empty, "decided_by": self.missing}
        claims = self.deciding
        if not claims:
            reason = "no sub-claim could be formed from this run"
            return {"verdict": "inconclusive", "reason": reason, **empty, "decided_by": reason}
        results = [claim.evaluate(config) for claim in claims]
        statuses = [result["status"] for result in results]
        verdict = label(statuses)
        untested = list(dict.fromkeys(reason for claim in claims for reason in claim.unlearned))
        unresolved = [r for r in results if r["status"] in ("unresolved", "missing")]
        roomless = [r for r in results if r["status"] == NO_ROOM]
        if verdict == "not reproduced":
            chosen = sorted(
                (r for r in results if r["status"] == "contradicted"), key=lambda r: -r["flip_confidence"]
            )
            reason = "contradicted on the runs that learned: " + "; ".join(r["subclaim"] for r in chosen)
            if untested:
                reason += ". Untested: " + "; ".join(untested)
        elif verdict == "reproduced":
            chosen = [min(results, key=lambda r: r["flip_confidence"])]
            reason = f"every sub-claim supported (nearest to changing: {chosen[0]['subclaim']})"
        else:
            chosen = [r for r in results if r["status"] not in ("supported", "contradicted")]
            said = []
            if untested:
                said.append("untested: " + "; ".join(untested))
            if roomless:
                said.append("no room: " + "; ".join(f"{r['subclaim']} ({r['reason']})" for r in roomless))
            few = [r["subclaim"] for r in unresolved if r["reason"] == FEWER_SEEDS]
            if few and len(few) == len(unresolved):
                said.append(f"{FEWER_SEEDS}: " + "; ".join(_unresolved(r) for r in unresolved))
            elif unresolved:
                said.append("intervals do not clear the margin: " + "; ".join(_unresolved(r) for r in unresolved))
            reason = ". ".join(said)
        notes = list(dict.fromkeys(claim.note for claim in claims if claim.note))
        if notes:  # e.g. runs left out of a pool, or an effect measured between unlearned models
            reason += ". " + "; ".join(notes)
        parts = _by_group(claims, results) if verdict != "reproduced" else ""
        if parts:
            reason += f". {parts}"
        band = {
            level: label([claim.evaluate(IntervalConfig(level))["status"] for claim in claims])
            for level in FRAGILE_BAND
        }
        fragile = any(word != verdict for word in band.values())
        fragility = ", ".join(f"{word} at {level:.0%}" for level, word in band.items()) if fragile else ""
        return {
            "verdict": verdict,
            "reason": reason,
            "deciding": "; ".join(r["subclaim"] for r in chosen),
            "decided_by": decided_by(verdict, chosen),
            "fragile": fragile,
            "fragility": fragility,
            "measured": " | ".join(result["text"] for result in results),
            "rests_on": rests_on(results),
        }

    def rows(self, config: IntervalConfig, reading: str) -> list[dict]:
        """One row per sub-claim for ``subclaims.csv``."""
        return [
            {"finding": self.number, "reading": reading, **claim.evaluate(config)} for claim in self.claims
        ]


def decided_by(verdict: str, chosen: list[dict]) -> str:
    """What decided a verdict, in words: the first deciding sub-claim's plain sentence and its status."""
    if not chosen:
        return ""
    first = chosen[0]
    words = first["plain"] or first["subclaim"]
    more = f" (+{len(chosen) - 1} more)" if len(chosen) > 1 else ""
    said = {
        "contradicted": "not so",
        "supported": "so, the closest call",
        "unresolved": "undecided at these seeds",
        "unlearned": "untested: a model did not learn its task",
        NO_ROOM: "no room to show it",
        "missing": "no data",
    }[first["status"]]
    return f"{words}: {said}{more}"
