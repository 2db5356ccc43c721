"""The README's results section, generated from a finished run's files.

The section sits between two HTML comments in README.md and is replaced as a whole,
so it always shows one run: its date, its scale, the claims verdicts, how long each
model trained and whether it reached the stopping criterion, the behaviour table,
when the run measured finding 7, the Conv1D ablation table, and, when the directory
holds a sweep table, the sweep the defaults came from, with nothing typed in by hand.
"""

from __future__ import annotations

import pandas as pd

from statelayers.models.registry import ARCHS, display_name
from statelayers.report.claims import LEARNED_ACCURACY, MARGINS, MIN_SEEDS
from statelayers.report.stats import INTERVAL_KIND
from statelayers.sweep import best_points, variant_names

START, END = "<!-- results:start -->", "<!-- results:end -->"
VARIANT_NAMES = {"noconv_trained": "trained without", "noconv_inference": "removed at inference"}


def _cell(row: pd.Series) -> str:
    if pd.isna(row["ci_low"]):
        return f"{row['mean']:.3f}"
    return f"{row['mean']:.3f} [{row['ci_low']:.3f}, {row['ci_high']:.3f}]"


def behaviour_markdown(summary: pd.DataFrame, metric: str = "token_accuracy") -> str:
    """Rows (task, arch); columns the evaluation lengths: mean [95 % CI] over seeds."""
    frame = summary[summary["metric"] == metric]
    lengths = sorted(frame["eval_length"].unique())
    lines = [
        "| task | architecture | " + " | ".join(f"L = {length}" for length in lengths) + " |",
        "| --- | --- |" + " --- |" * len(lengths),
    ]
    for (task, arch), group in frame.groupby(["task", "arch"], sort=False):
        cells = group.set_index("eval_length").sort_index()
        row = " | ".join(_cell(cells.loc[length]) for length in lengths)
        lines.append(f"| {task} | {display_name(arch)} | {row} |")
    return "\n".join(lines)


def training_markdown(training: pd.DataFrame, behaviour_summary: pd.DataFrame) -> str:
    """Rows (task, arch) in ``training``'s order: steps used (mean over seeds, range), seeds
    that reached the criterion, final validation token accuracy (mean), and test token
    accuracy at the training length, mean [95 % CI] over seeds, from ``behaviour_summary``."""
    length = int(training["train_length"].iloc[0])
    at_length = behaviour_summary[
        (behaviour_summary["metric"] == "token_accuracy") & (behaviour_summary["eval_length"] == length)
    ].set_index(["task", "arch"])
    header = (
        "| task | architecture | steps used (range) of max | seeds that reached the criterion "
        f"| validation token accuracy | test token accuracy at L = {length} |"
    )
    lines = [
        header,
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for (task, arch), runs in training.groupby(["task", "arch"], sort=False):
        low, high = int(runs["steps"].min()), int(runs["steps"].max())
        steps = f"{runs['steps'].mean():.0f}" + (f" ({low}-{high})" if low != high else "")
        steps += f" of {int(runs['max_steps'].max())}"
        reached = f"{int(runs['reached'].sum())} of {len(runs)}"
        test = _cell(at_length.loc[(task, arch)]) if (task, arch) in at_length.index else "n/a"
        lines.append(
            f"| {task} | {display_name(arch)} | {steps} | {reached} "
            f"| {runs['validation_token_accuracy'].mean():.3f} | {test} |"
        )
    return "\n".join(lines)


def sweep_markdown(sweep: pd.DataFrame) -> str:
    """Rows (task, arch) in ``sweep``'s order; a column per learning rate, or, where the
    sweep varied more than the learning rate, a column per variant (block, start token,
    batch size: :func:`statelayers.sweep.variant_names`) showing its best learning rate
    (:func:`statelayers.sweep.best_points`). A cell is the final validation token
    accuracy (mean over the sweep's seeds), then, where every seed reached the criterion,
    a check mark and the mean steps; bold where the point is ``selected`` for the pair."""
    sweep = sweep.assign(_variant=variant_names(sweep))
    by_variant = sweep["_variant"].nunique() > 1
    column = "_variant" if by_variant else "lr"
    names = sorted(sweep[column].unique())
    if by_variant:
        sweep = best_points(sweep, ["arch", "task", "_variant"])
    header = names if by_variant else [f"lr {lr:g}" for lr in names]
    lines = ["| task | architecture | " + " | ".join(header) + " |", "| --- | --- |" + " --- |" * len(names)]
    for (task, arch), group in sweep.groupby(["task", "arch"], sort=False):
        at = group.set_index(column)
        cells = []
        for name in names:
            if name not in at.index:
                cells.append("n/a")
                continue
            row = at.loc[name]
            cell = f"{row['validation_token_accuracy']:.3f}"
            cell += f" ✓ {row['steps']:.0f}" if row["reached"] == row["seeds"] else ""
            cell += f" (lr {row['lr']:g})" if by_variant else ""
            cells.append(f"**{cell}**" if row["selected"] else cell)
        lines.append(f"| {task} | {display_name(arch)} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def learnability_markdown(table: pd.DataFrame) -> str:
    """Rows (task, arch) in ``table``'s order (``benchmarks/learnability.csv``,
    :mod:`statelayers.report.learnability`): steps until validation first reached the
    learned threshold and 0.99 (``never`` within the cap), the best validation accuracy,
    the run's step budget, its training time and the budget the study gives the pair."""
    lines = [
        f"| task | architecture | steps to {LEARNED_ACCURACY} | steps to 0.99 | best validation accuracy "
        "| steps at most | training time | study budget |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    steps = lambda value: "never" if pd.isna(value) else f"{int(value)}"  # noqa: E731
    for row in table.itertuples():
        lines.append(
            f"| {row.task} | {display_name(row.arch)} | {steps(row.steps_to_95)} | {steps(row.steps_to_99)} "
            f"| {row.best_val_accuracy:.3f} | {int(row.cap)} | {row.wall_s:.0f} s | {int(row.study_max_steps)} |"
        )
    return "\n".join(lines)


def conv1d_markdown(summary: pd.DataFrame) -> str:
    """One row per (family, task, variant) of ``conv1d_summary.csv``."""
    lines = [
        "| family | task | Conv1D | difference (pp) [95 % CI] | seeds | p (Holm) |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for row in summary.itertuples():
        p_holm = "n/a" if pd.isna(row.p_holm) else f"{row.p_holm:.3g}" + (" *" if row.significant else "")
        lines.append(
            f"| {display_name(row.family)} | {row.task} | {VARIANT_NAMES[row.variant]} "
            f"| {row.difference_pp:+.1f} [{row.ci_low:+.1f}, {row.ci_high:+.1f}] | {row.n_seeds} | {p_holm} |"
        )
    return "\n".join(lines)


def _escape(text: str) -> str:
    return str(text).replace("|", "\\|")


def results_section(
    claims: pd.DataFrame,
    behaviour_summary: pd.DataFrame,
    training: pd.DataFrame,
    date: str,
    run_time: str,
    conv1d_summary: pd.DataFrame | None = None,
    sweep: pd.DataFrame | None = None,
    probe_figure: str | None = None,
    learnability: pd.DataFrame | None = None,
    paper_steps: int | None = None,
) -> str:
    """The whole marked section; the Conv1D table only where ``conv1d_summary`` is given,
    the sweep the defaults came from where ``sweep`` is, the probe figure (a path
    relative to the README) where ``probe_figure`` is, and the budget each pair needs
    where ``learnability`` is, beside the paper's step budget ``paper_steps``."""
    order = {name: i for i, name in enumerate(["parity", "s3", "dyck", "codedepth", *ARCHS])}
    by_task = lambda frame: frame.sort_values(  # noqa: E731
        ["task", "arch"], key=lambda c: c.map(order).fillna(len(order)), kind="stable"
    )
    summary = by_task(behaviour_summary)
    verdicts = "\n".join(
        f"| {row.finding} | **{row.verdict}** | {_escape(row.reason)} | {_escape(row.rests_on or '')} |"
        for row in claims.fillna({"rests_on": ""}).itertuples()
    )
    margins = ", ".join(f"{name} {margin:g}" for name, margin in MARGINS.items())
    interval_note = [
        f"Each verdict rests on 95 % {INTERVAL_KIND} intervals over seeds (n per sub-claim in the",
        f"last column); no sub-claim is decided from fewer than {MIN_SEEDS} seeds, and a claimed",
        f"difference must clear its margin of practical equivalence ({margins}), fixed before",
        "the run was looked at. `results/subclaims.csv` has every sub-claim's interval.",
        "",
    ]
    conv1d_lines = []
    if conv1d_summary is not None:
        conv1d_lines = [
            "Conv1D ablation: token accuracy of the ablated model minus its family's, percentage",
            "points averaged over evaluation lengths, mean over seeds [95 % Student-t CI], paired",
            "t-test over seeds with Holm's correction (* below 0.05):",
            "",
            conv1d_markdown(conv1d_summary),
            "",
        ]
    learnability_lines = []
    if learnability is not None:
        learnability_lines = [
            "The budget each pair needs (`snakemake learnability`, `benchmarks/learnability.csv`): seed 0",
            "of each pair, its default run where that reached the criterion, else trained again with its",
            f"settings to at most {int(learnability['cap'].max())} steps. A finding about a pair becomes",
            f"answerable once the pair learns, at about its steps to {LEARNED_ACCURACY} (on validation here,",
            "on test accuracy in the claims check); a finding needs its slowest pair"
            + (f"; `config/paper.yaml` trains up to {paper_steps:,} steps:" if paper_steps else ":"),
            "",
            learnability_markdown(by_task(learnability)),
            "",
        ]
    sweep_lines = []
    if sweep is not None:
        sweep_lines = [
            f"Hyper-parameters: the sweep (`snakemake sweep`, at most {int(sweep['max_steps'].max())} steps",
            f"at the smallest batch, every point on as many sequences, {int(sweep['seeds'].max())} seed(s) per point)",
            "selected each pair's point (bold) from validation accuracy alone: final validation token",
            "accuracy, with a check mark and the mean steps where every seed reached the criterion:",
            "",
            sweep_markdown(by_task(sweep)),
            "",
        ]
    return "\n".join(
        [
            START,
            f"Run of {date} ({run_time}). Scale: {claims['scale'].iloc[0]}.",
            "",
            "| finding | verdict | reason | rests on |",
            "| --- | --- | --- | --- |",
            verdicts,
            "",
            *interval_note,
            *(
                [
                    f"![Probe accuracy by layer and its gain over the untrained twin]({probe_figure})",
                    "",
                    "Probe accuracy by layer for the training label (top) and its gain over the untrained",
                    "twin (bottom), a line per architecture, band = seed range.",
                    "",
                ]
                if probe_figure
                else []
            ),
            "Training: steps used until two consecutive validation checks reached the target",
            "accuracy or until `max_steps`; the claims check counts a run as having learned its",
            f"task when its test token accuracy at the training length is at least {LEARNED_ACCURACY}:",
            "",
            training_markdown(by_task(training), behaviour_summary),
            "",
            "Token accuracy by evaluation length, mean over seeds [95 % Student-t CI]:",
            "",
            behaviour_markdown(summary),
            "",
            *learnability_lines,
            *conv1d_lines,
            *sweep_lines,
            "The numbers behind every verdict are in `results/claims.md`; regenerate this section",
            "after a run with `make readme-results`.",
            END,
        ]
    )


def replace_section(readme: str, section: str) -> str:
    """``readme`` with the text between the markers (inclusive) replaced by ``section``."""
    if readme.count(START) != 1 or readme.count(END) != 1:
        raise ValueError(f"README must contain {START} and {END} exactly once")
    head, rest = readme.split(START)
    return head + section + rest.split(END)[1]
