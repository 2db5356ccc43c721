"""The README's results section, generated from a finished run's files.

The section sits between two HTML comments in README.md and is replaced as a whole,
so it always shows one run: its date, its scale, the claims verdicts, the
behaviour table and, when the run measured finding 7, the Conv1D ablation table, with
nothing typed in by hand.
"""

from __future__ import annotations

import pandas as pd

START, END = "<!-- results:start -->", "<!-- results:end -->"
ARCH_NAMES = {
    "transformer": "Transformer",
    "mamba": "Mamba",
    "mamba2": "Mamba-2",
    "lstm": "LSTM",
    "gru": "GRU",
    "mamba_noconv": "Mamba without Conv1D",
    "mamba2_noconv": "Mamba-2 without Conv1D",
}
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
        lines.append(f"| {task} | {ARCH_NAMES.get(arch, arch)} | {row} |")
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
            f"| {ARCH_NAMES.get(row.family, row.family)} | {row.task} | {VARIANT_NAMES[row.variant]} "
            f"| {row.difference_pp:+.1f} [{row.ci_low:+.1f}, {row.ci_high:+.1f}] | {row.n_seeds} | {p_holm} |"
        )
    return "\n".join(lines)


def _escape(text: str) -> str:
    return str(text).replace("|", "\\|")


def results_section(
    claims: pd.DataFrame,
    behaviour_summary: pd.DataFrame,
    date: str,
    run_time: str,
    conv1d_summary: pd.DataFrame | None = None,
) -> str:
    """The whole marked section; the Conv1D table only where ``conv1d_summary`` is given."""
    order = {name: i for i, name in enumerate(["parity", "s3", "dyck", "codedepth", *ARCH_NAMES])}
    summary = behaviour_summary.sort_values(["task", "arch"], key=lambda c: c.map(order).fillna(len(order)))
    verdicts = "\n".join(
        f"| {row.finding} | **{row.verdict}** | {_escape(row.reason)} |" for row in claims.itertuples()
    )
    seeds = int(behaviour_summary["n_seeds"].min())
    seed_note = []
    if seeds == 2:  # resampled means of two values lie between them (one value has no interval)
        seed_note = [
            "With 2 seeds a percentile-bootstrap interval spans the two seeds' values: an interval",
            "clear of the bound says both seeds agree, not that the difference is significant.",
            "",
        ]
    conv1d_lines = []
    if conv1d_summary is not None:
        conv1d_lines = [
            "Conv1D ablation: token accuracy of the ablated model minus its family's, percentage",
            "points averaged over evaluation lengths, mean over seeds [95 % bootstrap CI], paired",
            "t-test over seeds with Holm's correction (* below 0.05):",
            "",
            conv1d_markdown(conv1d_summary),
            "",
        ]
    return "\n".join(
        [
            START,
            f"Run of {date} ({run_time}). Scale: {claims['scale'].iloc[0]}.",
            "",
            "| finding | verdict | reason |",
            "| --- | --- | --- |",
            verdicts,
            "",
            *seed_note,
            "Token accuracy by evaluation length, mean over seeds [95 % bootstrap CI]:",
            "",
            behaviour_markdown(summary),
            "",
            *conv1d_lines,
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


def complete_run(log_text: str) -> tuple[int, str] | None:
    """(jobs, elapsed time) of a Snakemake log that ran to completion, else ``None``."""
    import re

    done = re.findall(r"^(\d+) of \1 steps \(100%\) done$", log_text, re.M)
    elapsed = re.search(r"^Elapsed time: (\d+:\d\d:\d\d)", log_text, re.M)
    return (int(done[-1]), elapsed.group(1)) if done and elapsed else None
