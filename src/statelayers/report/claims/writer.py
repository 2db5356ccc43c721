"""The claims check's report: ``claims.md`` (the verdict table, every sub-claim with its
interval, margin and room, the robustness table, and which runs learned their task)."""

from __future__ import annotations

import pandas as pd

from statelayers.report.claims.check import DECIDED, ClaimsCheck
from statelayers.report.claims.engine import FRAGILE_BAND, MARGINS, MIN_SEEDS, ROOM_FACTOR, SIGNS
from statelayers.report.stats import INTERVAL_KIND


def _interval_kind(subclaims: pd.DataFrame) -> str:
    """The interval the sub-claims were decided with (the configured kind when there are none)."""
    return subclaims["interval"].iloc[0] if len(subclaims) else INTERVAL_KIND


def subclaims_table(subclaims: pd.DataFrame) -> list[str]:
    """The decided reading's sub-claims of ``subclaims.csv`` as markdown rows: interval,
    claim, margin, room, status and where it would change."""
    kind = _interval_kind(subclaims)
    decided = subclaims[subclaims["reading"] == DECIDED].fillna({"reason": "", "seeds_to_decide": ""})
    lines = [
        f"| # | sub-claim | n | mean [{kind} CI] | claimed | margin | room | status | changes status at |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in decided.itertuples():
        interval = f"{r.mean:+.3f} [{r.ci_low:+.3f}, {r.ci_high:+.3f}]" if pd.notna(r.mean) else ""
        status = f"{r.status} ({r.reason})" if r.reason else r.status
        if not r.decides:
            status += ", reported only"
        flip = f"{r.flip_confidence:.1%}" + (" **fragile**" if r.fragile else "") if pd.notna(r.flip_confidence) else ""
        if r.seeds_to_decide:
            flip += f"{'; ' if flip else ''}decided at {r.seeds_to_decide} (planning figure)"
        room = f"{r.room:.3g}" if pd.notna(r.room) else ""
        lines.append(
            f"| {r.finding} | {r.subclaim} | {r.n} | {interval} | {SIGNS[r.kind]} {r.bound:+.3f} "
            f"| {r.margin:g} ({r.quantity}) | {room} | {status} | {flip} |"
        )
    return lines


def claims_markdown(check: ClaimsCheck, train_length: int, learned_accuracy: float | None) -> str:
    """The claims table (fragile verdicts marked), what each verdict rests on, every
    sub-claim with its interval, margin, room, n and distance from changing status, the
    verdicts under the alternative analysis choices, and which runs learned their task and
    how many of their probes converged."""
    claims = check.verdicts
    lines = [
        "| # | verdict | same under | deciding | reason | rests on | paper |",
        "|---|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {r.finding} | **{r.verdict}**{f' (fragile: {r.fragility})' if r.fragile else ''} "
        f"| {r.robust}{f' (changed by: {r.changed_by})' if r.changed_by else ''} "
        f"| {r.deciding} | {r.reason} | {r.rests_on} | {r.paper} |"
        for r in claims.itertuples()
    ]
    subclaims = subclaims_table(check.subclaims)
    kind = _interval_kind(check.subclaims)
    robustness = ["| # | alternative | verdict | deciding | same |", "|---|---|---|---|---|"]
    robustness += [
        f"| {r.finding} | {r.alternative} | {r.verdict} | {r.deciding} | {'yes' if r.same else '**no**'} |"
        for r in check.robustness.itertuples()
    ]
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
    extension = []
    if not check.extension.empty:
        extension = [
            "\n## Extension: findings 2 and 4 with a signed variant in its family's place\n",
            "Not the reproduction: a stated change of model (docs/methods.md). The reasons name the family.\n",
            "| # | variant | in place of | verdict | deciding | reason |",
            "|---|---|---|---|---|---|",
        ]
        extension += [
            f"| {r.finding} | {r.stand_in} | {r.family} | **{r.verdict}** | {r.deciding} | {r.reason} |"
            for r in check.extension.itertuples()
        ]
    scale = claims["scale"].iloc[0]
    margins = ", ".join(f"{name} {margin:g}" for name, margin in MARGINS.items())
    low, high = FRAGILE_BAND
    return "\n".join(
        [
            f"# Claims check\n\nScale: {scale}\n",
            (
                f"Intervals: {kind} over seeds; no sub-claim is decided from fewer than "
                f"{MIN_SEEDS} seeds. Margins of practical equivalence: {margins}. A sub-claim "
                f"whose room is below {ROOM_FACTOR:g} margins has no room and decides nothing. "
                f"A verdict marked fragile differs at {low:.0%} or {high:.0%} confidence; a "
                f"sub-claim marked fragile changes status between them.\n"
            ),
            *lines,
            "\n## Sub-claims (verdicts)\n",
            *subclaims,
            "\n## Verdicts under the alternative analysis choices (findings 1-5)\n",
            *robustness,
            *extension,
            (
                f"\n## Runs that learned their task (test token accuracy at L = {train_length} "
                f">= {learned_accuracy})\n"
            ),
            "Findings 2-5 use only these runs; findings 2-4 also leave out runs whose label "
            "probes stopped at max_iter (per seed: every probe of the run that did, at the fit length).\n",
            *runs,
            "",
        ]
    )
