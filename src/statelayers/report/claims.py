"""The claims check: which of the paper's findings (STUDY.md, 1-7) this run reproduces.

The rules were written down before any result was looked at and are applied unchanged
whatever the scale. Each finding is a list of sub-claims; each sub-claim is a quantity
computed per seed (differences between architectures are paired by seed) whose 95 %
bootstrap interval over seeds (:mod:`statelayers.report.stats`) is compared with a bound:

- *supported* when the whole interval lies on the claimed side of the bound,
- *contradicted* when the whole interval lies on the other side,
- *unresolved* otherwise (or with a single seed, which has no interval).

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
of the task, names the runs it left out, and is unresolved only when fewer than
:data:`MIN_LEARNED_SEEDS` runs of the task learned it.

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
   erasing the probe directions there costs < 0.002 accuracy, and patching the input of
   its last block (layer ``n_blocks - 1``) from the clean run into the corrupted one at
   the middle half of the positions recovers > 0.9 of the logit difference (the output
   of the last block at an earlier position cannot reach the metric position; its input
   can, through the block's recurrence).
7. Conv1D (the ``mamba_noconv`` twin trained without it; :mod:`statelayers.report.conv1d`):
   the accuracy lost without Conv1D (Mamba minus twin, percentage points of token
   accuracy averaged over evaluation lengths, paired by seed) is > 0 on s3 and on parity,
   and larger on s3 than on dyck. Paired t-tests with Holm's correction are reported
   beside it in ``conv1d_summary.csv``.

Findings 1-5 concern the five families; Conv1D-ablated twins enter finding 7 only.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from statelayers.models.registry import FAMILIES, RECURRENT, SSM
from statelayers.report.conv1d import per_seed_differences
from statelayers.report.stats import BootstrapConfig, mean_ci, profile_shapes

LEARNED_ACCURACY = 0.95
"""Test token accuracy at the training length from which a run counts as having learned its task."""
GAIN_PROFILE = "gain_over_untrained"
"""The profile findings 2-4 are also reported on (``on_gains``): accuracy minus the untrained twin's."""
MIN_LEARNED_SEEDS = 2
"""Learned seeds an architecture needs on a task for a sub-claim about it: an interval needs two."""
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
    bound: float = 0.0
    """Supported when the interval lies above ``bound``."""
    unlearned: tuple[str, ...] = ()
    """Why it cannot be decided: the models it needs that did not learn their task."""
    note: str = ""
    """Said beside the measured numbers (runs left out of a pooled sub-claim)."""

    def status(self, config: BootstrapConfig) -> tuple[str, str]:
        if self.unlearned:
            return "unlearned", f"{self.name}: unresolved, {'; '.join(self.unlearned)}"
        values = self.per_seed.dropna().to_numpy()
        if len(values) == 0:
            return "missing", f"{self.name}: no data"
        mean, low, high = mean_ci(values, config)
        text = f"{self.name}: {mean:+.3f} [{low:+.3f}, {high:+.3f}] vs {self.bound:+.3f} (n={len(values)})"
        text += f" ({self.note})" if self.note else ""
        if len(values) > 1 and low > self.bound:
            return "supported", text
        if len(values) > 1 and high < self.bound:
            return "contradicted", text
        return "unresolved", text


@dataclass
class Finding:
    number: int
    claims: list[SubClaim] = field(default_factory=list)
    missing: str | None = None

    def statuses(self, config: BootstrapConfig) -> str:
        """Each sub-claim's numbers and status, for reporting beside a verdict."""
        if self.missing:
            return self.missing
        results = [claim.status(config) for claim in self.claims]
        return " | ".join(text if status == "unlearned" else f"{text}: {status}" for status, text in results)

    def verdict(self, config: BootstrapConfig) -> dict:
        if self.missing:
            return {"verdict": "inconclusive", "reason": self.missing, "measured": ""}
        results = [claim.status(config) for claim in self.claims]
        statuses = [status for status, _ in results]
        measured = " | ".join(text for _, text in results)
        unlearned = list(dict.fromkeys(reason for claim in self.claims for reason in claim.unlearned))
        if unlearned:
            contradicted = [claim.name for claim, s in zip(self.claims, statuses) if s == "contradicted"]
            reason = "; ".join(unlearned)
            if contradicted:
                reason += " (contradicted among the runs that learned: " + "; ".join(contradicted) + ")"
            return {"verdict": "inconclusive", "reason": reason, "measured": measured}
        if "contradicted" in statuses:
            verdict, reason = (
                "not reproduced",
                "contradicted: "
                + "; ".join(claim.name for claim, s in zip(self.claims, statuses) if s == "contradicted"),
            )
        elif all(s == "supported" for s in statuses):
            verdict, reason = "reproduced", "every sub-claim supported"
        else:
            verdict, reason = (
                "inconclusive",
                "intervals include the bound: "
                + "; ".join(claim.name for claim, s in zip(self.claims, statuses) if s != "supported"),
            )
        return {"verdict": verdict, "reason": reason, "measured": measured}


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
                    0.99,
                )
            )
    dyck = task(mean_acc, "dyck")
    for other in (*SSM, "transformer"):
        finding.claims.append(
            SubClaim(
                f"dyck recurrent - {other}",
                _by_seed(dyck, RECURRENT, "token_accuracy") - _by_seed(dyck, other, "token_accuracy"),
            )
        )
    for name in ("s3", "parity"):
        frame = task(mean_acc, name)
        recurrent, ssm, transformer = (
            _by_seed(frame, a, "token_accuracy") for a in (RECURRENT, SSM, "transformer")
        )
        finding.claims += [
            SubClaim(f"{name} recurrent - SSM", recurrent - ssm),
            SubClaim(f"{name} SSM - transformer", ssm - transformer),
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

    def claim(name: str, per_seed: pd.Series, bound: float, needs: list[tuple[str, str]]) -> SubClaim:
        return SubClaim(name, per_seed, bound, unlearned=learned.blocking(needs))

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
                        -0.5,
                        [(arch, name)],
                    )
                )
                jump.claims.append(
                    claim(
                        f"{name} {arch} - transformer late concentration",
                        late(name, arch) - late(name, "transformer"),
                        0.0,
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
                -0.5,
                [("transformer", "dyck")],
            )
        )
        for arch in ("mamba", "lstm"):
            dyck.claims.append(
                claim(
                    f"dyck {arch} - transformer first block at 95 %",
                    first("dyck", arch) - first("dyck", "transformer"),
                    0.0,
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
                    0.0,
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
        blocked = failures if len(units_learned) < MIN_LEARNED_SEEDS else ()
        note = "left out: " + "; ".join(failures) if failures and not blocked else ""
        for length in (lengths[0], lengths[-1]):
            at_length = kept[(kept["task"] == name) & (kept["eval_length"] == length)]
            finding.claims.append(
                SubClaim(
                    f"{name} L={length}: probe-direction drop - random drop",
                    at_length.set_index(["arch", "seed"])["excess"],
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
            "pythia-160m: middle-third max drop - last-block drop", drop[middle].max(axis=1) - drop[n_blocks]
        ),
        SubClaim(
            "pythia-160m: best probe block - most necessary block",
            accuracy.drop(columns=0).idxmax(axis=1) - drop.drop(columns=0).idxmax(axis=1),
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
        ),
        SubClaim("mamba-130m: 0.002 - last-block probe-direction drop", 0.002 - drop[n_blocks]),
    ]
    if patching is None or "mamba-130m" not in set(patching["arch"]):
        finding.claims.append(
            SubClaim("mamba-130m: patching recovery - 0.9 (patching did not run)", pd.Series())
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
        SubClaim("s3 accuracy lost without Conv1D (pp)", lost["s3"]),
        SubClaim("parity accuracy lost without Conv1D (pp)", lost["parity"]),
        SubClaim("s3 loss - dyck loss (pp)", lost["s3"] - lost["dyck"]),
    ]
    return finding


def check_claims(
    behaviour: pd.DataFrame,
    probes: pd.DataFrame,
    ablations: pd.DataFrame | None,
    readability: pd.DataFrame | None,
    scale: str,
    train_length: int,
    config: BootstrapConfig = BootstrapConfig(),
    conv1d: pd.DataFrame | None = None,
    pretrained_probes: pd.DataFrame | None = None,
    pretrained_ablations: pd.DataFrame | None = None,
    patching: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """One row per finding 1-7: verdict, reason, measured numbers, the paper's, the run's scale.

    ``train_length`` is where :func:`learned_runs` reads whether a run learned its task.
    """
    learned = Learned(learned_runs(behaviour, train_length))
    findings = [
        behaviour_finding(behaviour),
        *profile_findings(probes, learned),
        necessity_finding(ablations, readability, learned),
    ]
    findings += [
        pretrained_finding(pretrained_probes, pretrained_ablations, patching),
        conv1d_finding(conv1d),
    ]
    on_gains = (
        {f.number: f.statuses(config) for f in profile_findings(probes, learned, GAIN_PROFILE)}
        if GAIN_PROFILE in probes
        else {}
    )
    return pd.DataFrame(
        [
            {
                "finding": f.number,
                **f.verdict(config),
                "on_gains": on_gains.get(f.number, ""),
                "paper": PAPER[f.number],
                "scale": scale,
            }
            for f in findings
        ]
    )


def claims_markdown(claims: pd.DataFrame, learned: pd.DataFrame, train_length: int) -> str:
    """The claims table, the measured numbers, and which runs learned their task (``learned``:
    :func:`learned_runs`)."""
    lines = ["| # | verdict | reason | paper |", "|---|---|---|---|"]
    lines += [f"| {r.finding} | **{r.verdict}** | {r.reason} | {r.paper} |" for r in claims.itertuples()]
    details = [f"- **{r.finding}**: {r.measured}" for r in claims.itertuples() if r.measured]
    gains = [
        f"- **{r.finding}**: {r.on_gains}" for r in claims.itertuples() if pd.notna(r.on_gains) and r.on_gains
    ]
    runs = ["| arch | task | seeds learned | test token accuracy at each seed |", "|---|---|---|---|"]
    for (arch, task), group in learned.groupby(["arch", "task"], sort=False):
        accuracy = ", ".join(f"{a:.3f}" for a in group.sort_values("seed")["accuracy"])
        runs.append(f"| {arch} | {task} | {int(group['learned'].sum())} of {len(group)} | {accuracy} |")
    scale = claims["scale"].iloc[0]
    return "\n".join(
        [
            f"# Claims check\n\nScale: {scale}\n",
            *lines,
            "\n## Measured (mean [95 % CI] vs bound)\n",
            *details,
            *(
                [
                    "\n## Findings 2-4 on the gain over the untrained twin (verdicts use accuracy)\n",
                    *gains,
                ]
                if gains
                else []
            ),
            (
                f"\n## Runs that learned their task (test token accuracy at L = {train_length} "
                f">= {LEARNED_ACCURACY})\n"
            ),
            "Findings 2-5 use only these runs.\n",
            *runs,
            "",
        ]
    )
