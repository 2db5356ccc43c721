"""The README's results section, generated from a finished run's files.

The section sits between two HTML comments in README.md and is replaced as a whole,
so it always shows one run: its date, its scale, the claims verdicts and the
behaviour table, with nothing typed in by hand.
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
}


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


def _escape(text: str) -> str:
    return str(text).replace("|", "\\|")


def results_section(claims: pd.DataFrame, behaviour_summary: pd.DataFrame, date: str, run_time: str) -> str:
    order = {name: i for i, name in enumerate(["parity", "s3", "dyck", "codedepth", *ARCH_NAMES])}
    summary = behaviour_summary.sort_values(["task", "arch"], key=lambda c: c.map(order).fillna(len(order)))
    verdicts = "\n".join(
        f"| {row.finding} | **{row.verdict}** | {_escape(row.reason)} |" for row in claims.itertuples()
    )
    return "\n".join(
        [
            START,
            f"Run of {date} ({run_time}). Scale: {claims['scale'].iloc[0]}.",
            "",
            "| finding | verdict | reason |",
            "| --- | --- | --- |",
            verdicts,
            "",
            "Token accuracy by evaluation length, mean over seeds [95 % bootstrap CI]:",
            "",
            behaviour_markdown(summary),
            "",
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
