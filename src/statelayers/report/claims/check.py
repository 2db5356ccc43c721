"""The claims check: verdicts on findings 1-7 under the decided analysis choices, every
sub-claim's numbers, and the same verdicts under each alternative choice (robustness).

Findings 2-5 are about how a model that solves a task encodes it, so they use only the
runs that learned the task (:class:`statelayers.report.claims.runs.Learned`); finding 1
keeps every run; 6 and 7 are not gated. A run whose label probe at the fit length
stopped at ``probes.max_iter`` is left out of the profile findings (2-4) like a run that
did not learn.

An extension is never mixed into these verdicts: where a run has signed-transition variants
(``mamba_signed``, ``mamba2_signed``), findings 2 and 4, the S3 profile's shape, are decided
a second time with each variant in its family's place (``extension_claims.csv``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import pandas as pd

from statelayers.models.registry import SIGNED, base_arch
from statelayers.report.claims.engine import Finding
from statelayers.report.claims.findings import (
    CLAIMS,
    PAPER,
    Choices,
    behaviour_finding,
    conv1d_finding,
    necessity_finding,
    pretrained_finding,
    profile_findings,
)
from statelayers.report.claims.runs import Learned, learned_runs, unconverged_probes

CLAIM_COLUMNS = [
    "finding", "claim", "verdict", "decided_by", "robust", "changed_by", "reason", "deciding",
    "fragile", "fragility", "measured", "rests_on", "paper", "scale",
]  # fmt: skip
SUBCLAIM_COLUMNS = [
    "finding", "reading", "subclaim", "group", "decides", "kind", "bound", "quantity", "margin", "room",
    "interval", "n", "seeds", "mean", "ci_low", "ci_high", "sd", "status", "reason",
    "flip_confidence", "fragile", "seeds_to_decide", "plain",
]  # fmt: skip
ROBUSTNESS_COLUMNS = ["finding", "alternative", "verdict", "deciding", "same"]
EXTENSION_COLUMNS = [
    "stand_in", "family", "finding", "claim", "verdict", "decided_by", "reason", "deciding",
    "fragile", "fragility", "measured", "rests_on",
]  # fmt: skip
EXTENDED_FINDINGS = (2, 4)
"""The findings an extension decides again: whether S3's profile has parity's shape, the
findings that rest on the families that learn S3."""
DECIDED = "decided"
"""The reading of the decided analysis choices in ``subclaims.csv``."""


@dataclass
class ClaimsCheck:
    verdicts: pd.DataFrame
    """``claims.csv``: one row per finding (:data:`CLAIM_COLUMNS`): the claim in plain
    words, verdict, what decided it in words, ``robust`` ("k of n": alternatives that keep
    the verdict) and ``changed_by`` (those that change it), the reason, the sub-claims that
    decide it (``deciding``), fragility, measured numbers, what it rests on, the paper's
    numbers, the run's scale."""
    runs: pd.DataFrame
    """Per run: arch, task, seed, accuracy, learned, unconverged, labels_converged."""
    subclaims: pd.DataFrame
    """``subclaims.csv``: one row per (finding, reading, sub-claim) (:data:`SUBCLAIM_COLUMNS`);
    reading ``decided`` or an alternative's name; ``room`` the largest value its quantity
    could take given the data, from its bound; status supported, contradicted, unresolved,
    no room, unlearned (untested) or missing."""
    robustness: pd.DataFrame
    """``robustness.csv``: per finding 1-5 and alternative (:data:`ROBUSTNESS_COLUMNS`): its
    verdict, the sub-claims that decided it, and whether it is the decided verdict."""
    extension: pd.DataFrame
    """``extension_claims.csv``: per signed variant that ran and finding of
    :data:`EXTENDED_FINDINGS` (:data:`EXTENSION_COLUMNS`), the verdict with the variant in its
    family's place (``stand_in`` in ``family``'s; the texts name the family); empty where
    none ran."""


def _with_probe_convergence(runs: pd.DataFrame, probe_counts: pd.DataFrame) -> pd.DataFrame:
    """``runs`` with ``labels_converged``: the profile findings (2-4) also leave out a run
    whose label probes stopped at ``probes.max_iter``."""
    return runs.merge(
        probe_counts[["arch", "task", "seed", "labels_converged"]],
        on=["arch", "task", "seed"],
        how="left",
    ).fillna({"labels_converged": True})


def _gated_findings(
    behaviour: pd.DataFrame,
    probes: pd.DataFrame,
    erasures: pd.DataFrame | None,
    readability: pd.DataFrame | None,
    train_length: int,
    choices: Choices,
    learnability: pd.DataFrame | None,
    probe_counts: pd.DataFrame,
) -> tuple[list[Finding], pd.DataFrame]:
    """Findings 1-5 under ``choices``, and the runs table they gated on; ``probe_counts`` is
    :func:`~statelayers.report.claims.runs.unconverged_probes` of ``probes``."""
    runs = learned_runs(behaviour, train_length, choices.learned_accuracy)
    converged = _with_probe_convergence(runs, probe_counts)
    findings = [
        behaviour_finding(behaviour, choices),
        *profile_findings(probes, Learned(converged, learnability), choices),
        necessity_finding(erasures, readability, Learned(runs, learnability)),
    ]
    return findings, converged


def in_place_of(table: pd.DataFrame, variant: str, family: str) -> pd.DataFrame:
    """``table`` with ``family``'s own runs dropped and ``variant``'s relabelled ``family``."""
    kept = table[table["arch"] != family]
    return kept.assign(arch=kept["arch"].replace(variant, family))


def extension_verdicts(
    behaviour: pd.DataFrame, probes: pd.DataFrame, train_length: int, choices: Choices
) -> pd.DataFrame:
    """:data:`EXTENDED_FINDINGS` under ``choices`` with each signed variant in ``probes`` in
    its family's place, gated like the study's runs (no learnability rows: those measure
    the family, not the variant)."""
    rows = []
    for variant in sorted(SIGNED & set(probes["arch"])):
        family = base_arch(variant)
        behaviour_in, probes_in = (in_place_of(table, variant, family) for table in (behaviour, probes))
        runs = learned_runs(behaviour_in, train_length, choices.learned_accuracy)
        learned = Learned(_with_probe_convergence(runs, unconverged_probes(probes_in)), None)
        for finding in profile_findings(probes_in, learned, choices):
            if finding.number in EXTENDED_FINDINGS:
                verdict = finding.verdict(choices.interval)
                rows.append(
                    {"stand_in": variant, "family": family, "finding": finding.number,
                     "claim": CLAIMS[finding.number], **verdict}  # fmt: skip
                )
    return pd.DataFrame(rows, columns=EXTENSION_COLUMNS)


def check_claims(
    behaviour: pd.DataFrame,
    probes: pd.DataFrame,
    erasures: pd.DataFrame | None,
    readability: pd.DataFrame | None,
    scale: str,
    train_length: int,
    choices: Choices,
    alternatives: dict[str, dict] | None = None,
    conv1d: pd.DataFrame | None = None,
    pretrained_probes: pd.DataFrame | None = None,
    pretrained_erasures: pd.DataFrame | None = None,
    patching: pd.DataFrame | None = None,
    learnability: pd.DataFrame | None = None,
) -> ClaimsCheck:
    """Verdicts on findings 1-7 under ``choices``, and findings 1-5 again under each of
    ``alternatives`` (name -> the :class:`Choices` fields it changes).

    ``train_length`` is where a run's learning is read; ``learnability`` (the rows of
    ``benchmarks/learnability*.csv``) what an untested pair needs.
    """
    tables = (behaviour, probes, erasures, readability, train_length)
    probe_counts = unconverged_probes(probes)
    findings, converged = _gated_findings(*tables, choices, learnability, probe_counts)
    findings += [
        pretrained_finding(pretrained_probes, pretrained_erasures, patching),
        conv1d_finding(conv1d, train_length, choices.learned_accuracy),
    ]
    config = choices.interval
    decided = {f.number: f.verdict(config) for f in findings}
    rows = [row for f in findings for row in f.rows(config, DECIDED)]
    robustness = []
    for name, change in (alternatives or {}).items():
        alternative = replace(choices, **change)
        for f in _gated_findings(*tables, alternative, learnability, probe_counts)[0]:
            verdict = f.verdict(alternative.interval)
            same = verdict["verdict"] == decided[f.number]["verdict"]
            robustness.append(
                {"finding": f.number, "alternative": name, "verdict": verdict["verdict"],
                 "deciding": verdict["deciding"], "same": same}  # fmt: skip
            )
            rows += f.rows(alternative.interval, name)
    robustness = pd.DataFrame(robustness, columns=ROBUSTNESS_COLUMNS)
    verdicts = pd.DataFrame(
        [
            {
                "finding": number,
                "claim": CLAIMS[number],
                **verdict,
                **_robust(robustness, number),
                "paper": PAPER[number],
                "scale": scale,
            }
            for number, verdict in decided.items()
        ],
        columns=CLAIM_COLUMNS,
    )
    subclaims = pd.DataFrame(rows, columns=[*SUBCLAIM_COLUMNS, "text"]).drop(columns="text")
    counts = probe_counts[["arch", "task", "seed", "unconverged"]]
    runs = converged.merge(counts, on=["arch", "task", "seed"], how="left").fillna({"unconverged": 0})
    extension = extension_verdicts(behaviour, probes, train_length, choices)
    return ClaimsCheck(verdicts, runs, subclaims, robustness, extension)


def _robust(robustness: pd.DataFrame, number: int) -> dict:
    """``robust`` ("k of n" alternatives keep the verdict) and ``changed_by`` (the others,
    each with the verdict it gives); empty where no alternative covers the finding."""
    mine = robustness[robustness["finding"] == number]
    if mine.empty:
        return {"robust": "", "changed_by": ""}
    changed = mine[~mine["same"]]
    return {
        "robust": f"{int(mine['same'].sum())} of {len(mine)}",
        "changed_by": "; ".join(f"{r.alternative} ({r.verdict})" for r in changed.itertuples()),
    }
