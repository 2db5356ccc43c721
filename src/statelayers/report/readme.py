"""README's verdict table and docs/results.md, generated from a finished run's files.

README.md holds one generated block between two HTML comments (:data:`START`,
:data:`END`), replaced as a whole: the run it comes from and one line per finding (its
verdict, marked where fragile, and the first sub-claim that decides it). docs/results.md
is generated whole: the run's date and scale, every verdict with its reason and what it
rests on, the probe figure, how long each model trained and whether it reached the
stopping criterion, the behaviour table, the Conv1D ablation table when the run measured
finding 7, the budget each pair needs and the hyper-parameter sweeps the defaults come
from. Nothing in either is typed in by hand.

A sweep table marks each pair's selected point in bold; where the config trains the
pair at another point (``training.overrides`` or ``model.options``), the selected cell
carries a dagger and a note under the table says what the config trains instead, what the
sweep measured there and which other sweep selects it (:func:`statelayers.sweep.config_overrides`).
"""

from __future__ import annotations

import pandas as pd

from statelayers.models.registry import ARCHS, display_name
from statelayers.report.claims.engine import MARGINS, MIN_SEEDS
from statelayers.report.claims.writer import subclaims_table
from statelayers.report.learnability import STEPS_TO_95_ACCURACY
from statelayers.report.stats import INTERVAL_KIND
from statelayers.sweep import best_points, config_overrides, variant_names

START, END = "<!-- verdicts:start -->", "<!-- verdicts:end -->"
"""The markers around README.md's generated block."""
DAGGER = "†"
"""Marks a selected sweep point that the config does not train (:func:`statelayers.sweep.config_overrides`)."""
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


def sweep_markdown(sweep: pd.DataFrame, overridden: set[tuple[str, str]] = frozenset()) -> str:
    """Rows (task, arch) in ``sweep``'s order; a column per learning rate, or, where the
    sweep varied more than the learning rate, a column per variant (block, start token,
    batch size: :func:`statelayers.sweep.variant_names`) showing its best learning rate
    (:func:`statelayers.sweep.best_points`). A cell is the final validation token
    accuracy (mean over the sweep's seeds), then, where every seed reached the criterion,
    a check mark and the mean steps; bold where the point is ``selected`` for the pair,
    and followed by :data:`DAGGER` where the pair is in ``overridden`` ((arch, task) pairs
    the config trains at another point)."""
    sweep = sweep.assign(_variant=variant_names(sweep))
    by_variant = sweep["_variant"].nunique() > 1
    column = "_variant" if by_variant else "lr"
    names = sorted(sweep[column].unique())
    if by_variant:
        sweep = best_points(sweep, ["arch", "task", "_variant"]).sort_index()  # rows in the given order
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
            if row["selected"]:
                cell = f"**{cell}**" + (f" {DAGGER}" if (arch, task) in overridden else "")
            cells.append(cell)
        lines.append(f"| {task} | {display_name(arch)} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def learnability_markdown(table: pd.DataFrame) -> str:
    """Rows (task, arch) in ``table``'s order (``benchmarks/learnability.csv``,
    :mod:`statelayers.report.learnability`): steps until validation first reached the
    learned threshold and 0.99 (``never`` within the cap), the best validation accuracy,
    the run's step budget, its training time and the budget the study gives the pair."""
    lines = [
        f"| task | architecture | steps to {STEPS_TO_95_ACCURACY} | steps to 0.99 | best validation accuracy "
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


def _split_top_level(text: str, separator: str = "; ") -> list[str]:
    """``text`` split at ``separator`` outside parentheses."""
    parts, depth, start, i = [], 0, 0, 0
    while i < len(text):
        if text[i] == "(":
            depth += 1
        elif text[i] == ")":
            depth = max(0, depth - 1)
        elif depth == 0 and text.startswith(separator, i):
            parts.append(text[start:i])
            start = i + len(separator)
            i = start
            continue
        i += 1
    return [part for part in [*parts, text[start:]] if part]


def _is_true(value: object) -> bool:
    return str(value).strip().lower() == "true"


def deciding_subclaims(row: pd.Series | dict) -> list[str]:
    """The sub-claims that decide a finding's verdict: ``claims.csv``'s ``deciding`` column
    ("; "-separated) where the run wrote one, else the items of its ``reason`` (after a
    leading "contradicted: ", "intervals do not clear the margin: " or the like)."""
    deciding = row.get("deciding")
    if isinstance(deciding, str) and deciding.strip():
        return [part.strip() for part in deciding.split("; ") if part.strip()]
    reason = row.get("reason")
    if not isinstance(reason, str) or not reason.strip():
        return []
    head, colon, tail = reason.partition(": ")
    if colon and head.startswith(("contradicted", "intervals", "unresolved", "untested")) and "(" not in head:
        reason = tail  # "contradicted: a; b" names the sub-claims after its colon
    return [part.strip() for part in _split_top_level(reason)]


def verdict_markdown(claims: pd.DataFrame) -> str:
    """One line per finding in plain words: the paper's claim, the verdict (``(fragile)``
    where it moves within the fragile band of confidence levels), what decided it, and under
    how many of the alternative analysis choices the verdict stays, naming those that change it."""
    lines = [
        "| # | the paper's claim | verdict | what decided it | same verdict under |",
        "| --- | --- | --- | --- | --- |",
    ]
    for _, row in claims.fillna("").iterrows():
        verdict = f"**{row['verdict']}**" + (" (fragile)" if _is_true(row.get("fragile")) else "")
        robust = str(row.get("robust", ""))
        if robust and row.get("changed_by"):
            robust += f" alternatives; not: {row['changed_by']}"
        elif robust:
            robust += " alternatives"
        else:
            robust = "not recomputed"
        cells = [row["finding"], row["claim"], verdict, row["decided_by"], robust]
        lines.append("| " + " | ".join(_escape(cell) for cell in cells) + " |")
    return "\n".join(lines)


def paper_budget_markdown(outcomes: pd.DataFrame, steps: int) -> str:
    """One sentence per pair of :func:`statelayers.report.learnability.budget_outcomes`:
    whether the paper's ``steps`` get seed 0 to the learned threshold, and if not its best
    validation accuracy and its slope over the last 2 000 steps."""
    if outcomes.empty:
        return ""
    said = []
    for row in outcomes.itertuples():
        pair = f"{display_name(row.arch)} on {row.task}"
        if row.reached:
            said.append(f"{pair} reaches validation {STEPS_TO_95_ACCURACY} at step {int(row.steps_to_95)}")
        else:
            said.append(
                f"{pair} does not reach it (best validation accuracy {row.best_val_accuracy:.3f}, "
                f"{row.slope_per_1000:+.3f} per 1 000 steps over the last 2 000)"
            )
    return (
        f"Within the paper's {steps} steps (`config/paper.yaml`; seed 0, "
        "`benchmarks/learnability*.csv`): " + "; ".join(said) + "."
    )


def extension_markdown(extension: pd.DataFrame) -> str:
    """One line of ``extension_claims.csv`` (findings 2 and 4 with a signed variant in its
    family's place), set apart from the reproduction's verdicts; empty without one."""
    if extension.empty:
        return ""
    said = [
        f"finding {row.finding} with {display_name(row.stand_in)} in {display_name(row.family)}'s place "
        f"**{row.verdict}** ({row.decided_by})"
        for row in extension.fillna("").itertuples()
    ]
    return (
        "Extension, not the reproduction (a stated change of model, `--configfile config/s3.yaml`; "
        "`results/extension_claims.csv`): " + "; ".join(_escape(words) for words in said) + "."
    )


def readme_block(
    claims: pd.DataFrame | None, run_time: str = "", budget_note: str = "", extension: pd.DataFrame | None = None
) -> str:
    """README.md's generated block: the run (its jobs and wall time, no date: README states
    what holds, docs/results.md when the run started) and :func:`verdict_markdown`, or,
    without a complete run (``claims`` None), what writes them; then the extension's
    verdicts (:func:`extension_markdown`) and ``budget_note`` (:func:`paper_budget_markdown`)
    where there are any."""
    if claims is None:
        body = [
            "No complete run in this directory: `make run`, then `make readme-results` writes the",
            "verdict table here and the full results to [docs/results.md](docs/results.md).",
        ]
    else:
        body = [
            f"From the last complete run here ({run_time}); its reasons, intervals and tables are",
            "in [docs/results.md](docs/results.md).",
            "",
            verdict_markdown(claims),
        ]
        if extension is not None and not extension.empty:
            body += ["", extension_markdown(extension)]
    if budget_note:
        body += ["", budget_note]
    return "\n".join([START, *body, END])


def _g(value: object) -> str:
    return f"{float(value):g}"


def _setting_words(setting: str, value: object) -> str:
    if setting == "start_token":
        return "a start token" if value else "no start token"
    if setting == "block":
        return f"the {value} block" if value else "options of no sweep block"
    if setting == "lr":
        return f"lr {_g(value)}"
    return f"batch {value}"


def override_notes(overrides: list[dict], config_name: str) -> list[str]:
    """A line per :func:`statelayers.sweep.config_overrides` entry, under the sweep table it marks."""
    lines = []
    for entry in overrides:
        trained = ", ".join(_setting_words(k, v[1]) for k, v in entry["differs"].items())
        selected = ", ".join(_setting_words(k, v[0]) for k, v in entry["differs"].items())
        keys = [
            f"`{key}`"
            for key, settings in (
                ("model.options", ("block", "start_token")),
                ("training.overrides", ("lr", "batch_size")),
            )
            if set(settings) & set(entry["differs"])
        ]
        line = (
            f"{DAGGER} `{config_name}` trains the {display_name(entry['arch'])} on {entry['task']} at {trained} "
            f"({' and '.join(keys)}), not at the selected {selected}"
        )
        row = entry["at_config"]
        if row is not None:
            line += (
                f"; this sweep measured {row['validation_token_accuracy']:.3f} validation token accuracy there, "
                f"{int(row['reached'])} of {int(row['seeds'])} seed(s) reaching the criterion"
            )
        if entry["selected_by"]:
            verb = "selects" if len(entry["selected_by"]) == 1 else "select"
            line += (
                "; " + " and ".join(f"`{other}`" for other in entry["selected_by"]) + f" {verb} that point"
            )
        lines.append(line + ".")
    return lines


def _sweep_lines(name: str, sweep: pd.DataFrame, overrides: list[dict], config_name: str) -> list[str]:
    overridden = {(entry["arch"], entry["task"]) for entry in overrides}
    schedule = (
        [
            "A schedule sweep: each column a step budget and the fraction of it over which the learning",
            "rate decays; a selected schedule sets the pair's budget only where every seed reached the",
            "criterion (a check mark), and the learnability rule's budget stands elsewhere.",
            "",
        ]
        if "decay_fraction" in sweep
        else []
    )
    return [
        f"### `{name}`",
        "",
        f"At most {int(sweep['max_steps'].max())} steps at the smallest batch, every point on as many sequences,",
        f"{int(sweep['seeds'].max())} seed(s) per point. Each pair's selected point is bold; {DAGGER} marks a",
        f"selected point that `{config_name}` does not train.",
        "",
        *schedule,
        sweep_markdown(sweep, overridden),
        "",
        *[line for note in override_notes(overrides, config_name) for line in (note, "")],
    ]


def _by_task(frame: pd.DataFrame) -> pd.DataFrame:
    order = {name: i for i, name in enumerate(["parity", "s3", "dyck", "codedepth", *ARCHS])}
    ordered = frame.sort_values(
        ["task", "arch"], key=lambda c: c.map(order).fillna(len(order)), kind="stable"
    )
    return ordered.reset_index(drop=True)


def robustness_markdown(robustness: pd.DataFrame, claims: pd.DataFrame) -> str:
    """A row per finding, a column per alternative: its verdict there, in bold where it
    differs from the decided verdict (first column)."""
    decided = claims.set_index("finding")["verdict"]
    alternatives = list(dict.fromkeys(robustness["alternative"]))
    table = robustness.pivot(index="finding", columns="alternative", values="verdict")
    lines = [
        "| # | decided | " + " | ".join(alternatives) + " |",
        "| --- | --- | " + " | ".join("---" for _ in alternatives) + " |",
    ]
    for finding, row in table.iterrows():
        cells = [row[a] if row[a] == decided[finding] else f"**{row[a]}**" for a in alternatives]
        lines.append(f"| {finding} | {decided[finding]} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def per_seed_markdown(behaviour: pd.DataFrame, train_length: int) -> str:
    """Per (task, architecture): each seed's test token and sequence accuracy at the training length."""
    at = behaviour[behaviour["eval_length"] == train_length].sort_values("seed")
    lines = ["| task | architecture | seeds | token accuracy | sequence accuracy |", "| --- | --- | --- | --- | --- |"]
    for (task, arch), group in _by_task(at).groupby(["task", "arch"], sort=False):
        token = ", ".join(f"{v:.3f}" for v in group["token_accuracy"])
        sequence = ", ".join(f"{v:.3f}" for v in group["sequence_accuracy"])
        seeds = ", ".join(str(int(s)) for s in group["seed"])
        lines.append(f"| {task} | {display_name(arch)} | {seeds} | {token} | {sequence} |")
    return "\n".join(lines)


def results_document(
    claims: pd.DataFrame | None,
    behaviour_summary: pd.DataFrame | None = None,
    training: pd.DataFrame | None = None,
    date: str = "",
    run_time: str = "",
    conv1d_summary: pd.DataFrame | None = None,
    sweeps: dict[str, pd.DataFrame] | None = None,
    probe_figure: str | None = None,
    learnability: pd.DataFrame | None = None,
    paper_steps: int | None = None,
    configured: dict[tuple[str, str], dict] | None = None,
    blocks: dict[str, dict[str, dict]] | None = None,
    config_name: str = "config/config.yaml",
    robustness: pd.DataFrame | None = None,
    behaviour: pd.DataFrame | None = None,
    train_length: int | None = None,
    learned_accuracy: float | None = None,
    subclaims: pd.DataFrame | None = None,
) -> str:
    """docs/results.md: the run's sections where ``claims`` is given (with its behaviour
    summary and training table; the verdicts under each alternative analysis choice where
    ``robustness`` is; each run's test accuracies at ``train_length`` where ``behaviour``,
    the per-seed behaviour table, is; the learned gate ``learned_accuracy`` is
    ``claims.learned_accuracy``; every decided sub-claim where ``subclaims``, the rows of
    ``subclaims.csv``, is; the Conv1D table where ``conv1d_summary`` is, the probe
    figure, a path relative to docs/, where ``probe_figure`` is), then the budget each pair
    needs where ``learnability`` is (beside the paper's step budget ``paper_steps``) and
    each sweep table of ``sweeps`` (name -> table), marked where ``configured``
    (:func:`statelayers.sweep.configured_point` per pair of ``config_name``) differs from its selection."""
    lines = [
        "# Results",
        "",
        "<!-- Generated by `make readme-results` (tools/readme_results.py); edits are overwritten. -->",
        "",
    ]
    if claims is None:
        lines += [
            "No complete run in this directory: the verdicts, the probe profiles, the training and",
            "the behaviour tables appear here after `make run` and `make readme-results`. The",
            "sections below come from the committed tables under `benchmarks/`.",
            "",
        ]
    else:
        margins = ", ".join(f"{name} {margin:g}" for name, margin in MARGINS.items())
        full = claims.fillna({"rests_on": "", "reason": ""})
        verdicts = []
        for _, row in full.iterrows():
            fragile = _is_true(row.get("fragile"))
            fragility = row.get("fragility") if isinstance(row.get("fragility"), str) else ""
            verdict = f"**{row['verdict']}**" + (f" (fragile: {fragility})" if fragile and fragility else "")
            verdict += " (fragile)" if fragile and not fragility else ""
            deciding = "; ".join(deciding_subclaims(row))
            verdicts.append(
                f"| {row['finding']} | {verdict} | {_escape(deciding)} | {_escape(row['reason'])} "
                f"| {_escape(row['rests_on'])} |"
            )
        lines += [
            f"Run of {date} ({run_time}). Scale: {claims['scale'].iloc[0]}.",
            "",
            "## Verdicts",
            "",
            "| finding | verdict | deciding sub-claims | reason | rests on |",
            "| --- | --- | --- | --- | --- |",
            *verdicts,
            "",
            f"Each verdict rests on 95 % {INTERVAL_KIND} intervals over seeds (n per sub-claim in the",
            f"last column); no sub-claim is decided from fewer than {MIN_SEEDS} seeds, a claimed",
            f"difference must clear its margin of practical equivalence ({margins}), and a",
            "sub-claim whose room (the largest value its quantity could take given the data) is",
            "below twice its margin decides nothing (docs/methods.md says which rules were fixed",
            "after which results had been seen). `results/claims.md` has the numbers behind every",
            "verdict, `results/subclaims.csv` every sub-claim's interval and room.",
            "",
        ]
        if subclaims is not None:
            lines += [
                "## Sub-claims",
                "",
                "Every sub-claim of the decided analysis choices, deciding or reported beside the",
                "verdict, with its interval over seeds (or architecture x seed units), margin and",
                "room (`results/subclaims.csv` has every alternative's too):",
                "",
                *subclaims_table(subclaims),
                "",
            ]
        if robustness is not None and not robustness.empty:
            lines += [
                "## The verdicts under the alternative analysis choices",
                "",
                "The same run, recomputed with one analysis choice the paper leaves open changed",
                "(`claims.alternatives`; `results/robustness.csv`):",
                "",
                robustness_markdown(robustness, claims),
                "",
            ]
        if probe_figure:
            lines += [
                "## Probe profiles",
                "",
                f"![Probe accuracy by layer and its gain over the untrained twin]({probe_figure})",
                "",
                "Probe accuracy by layer for the training label (top) and its gain over the untrained",
                "twin (bottom), a line per architecture, band = seed range.",
                "",
            ]
        lines += [
            "## Training",
            "",
            "Steps used until two consecutive validation checks reached the target accuracy or",
            "until `max_steps`; the claims check counts a run as having learned its task when its",
            f"test token accuracy at the training length is at least {learned_accuracy}:",
            "",
            training_markdown(_by_task(training), behaviour_summary),
            "",
            "## Behaviour",
            "",
            "Token accuracy by evaluation length, mean over seeds [95 % Student-t CI]:",
            "",
            behaviour_markdown(_by_task(behaviour_summary)),
            "",
            "Sequence accuracy (the share of sequences with every token right), the measure",
            "finding 1's comparisons are decided on:",
            "",
            behaviour_markdown(_by_task(behaviour_summary), "sequence_accuracy"),
            "",
        ]
        if behaviour is not None and train_length is not None:
            lines += [
                f"Each run's test accuracy at the training length (L = {train_length}), token / sequence:",
                "",
                per_seed_markdown(behaviour, train_length),
                "",
            ]
        if conv1d_summary is not None:
            lines += [
                "## Conv1D ablation",
                "",
                "Token accuracy of the ablated model minus its family's, percentage points averaged",
                "over evaluation lengths, mean over seeds [95 % Student-t CI], paired t-test over",
                "seeds with Holm's correction (* below 0.05):",
                "",
                conv1d_markdown(conv1d_summary),
                "",
            ]
    if learnability is not None:
        lines += [
            "## The budget each pair needs",
            "",
            "`snakemake learnability` (`benchmarks/learnability*.csv`): seed 0 of each pair, its default",
            "run where that reached the criterion, else trained again with its settings",
            f"to at most `steps at most` ({', '.join(str(int(c)) for c in sorted(learnability['cap'].unique()))}"
            " here). A finding about a pair becomes answerable once",
            f"the pair learns, at about its steps to {STEPS_TO_95_ACCURACY} (on validation here, on test accuracy in",
            "the claims check); a finding needs its slowest pair"
            + (f"; `config/paper.yaml` trains up to {paper_steps:,} steps." if paper_steps else "."),
            "",
            learnability_markdown(_by_task(learnability)),
            "",
        ]
    if sweeps:
        overrides = config_overrides(sweeps, configured or {}, blocks or {}) if configured else {}
        lines += [
            "## Hyper-parameter sweeps",
            "",
            "`snakemake sweep` selects each pair's point from validation accuracy alone. A cell is the",
            "final validation token accuracy (mean over the sweep's seeds), with a check mark and the",
            "mean steps where every seed reached the criterion; where the sweep varied more than the",
            "learning rate, a column per variant at its best learning rate.",
            "",
        ]
        for name, sweep in sweeps.items():
            lines += _sweep_lines(name, _by_task(sweep), overrides.get(name, []), config_name)
    return "\n".join(lines).rstrip("\n") + "\n"


def replace_section(readme: str, section: str) -> str:
    """``readme`` with the text between the markers (inclusive) replaced by ``section``."""
    if readme.count(START) != 1 or readme.count(END) != 1:
        raise ValueError(f"README must contain {START} and {END} exactly once")
    head, rest = readme.split(START)
    return head + section + rest.split(END)[1]
