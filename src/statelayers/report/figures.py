"""Paper-style figures from the aggregated tables (matplotlib, Agg backend).

Lines are means over seeds; bands span the lowest to the highest seed, and every
seed is drawn as a faint point so the spread stays visible with two seeds.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.ticker import NullFormatter, ScalarFormatter  # noqa: E402

from statelayers import files  # noqa: E402
from statelayers.models.registry import ARCHS, display_name, layer_label, line_style  # noqa: E402
from statelayers.report.learnability import thresholds  # noqa: E402
from statelayers.sweep import variant_names  # noqa: E402

TASK_TITLE = {"parity": "Parity", "s3": "S3", "dyck": "Dyck", "codedepth": "Code-Depth"}


def _ordered(values, order) -> list:
    present = list(dict.fromkeys(values))
    return [v for v in order if v in present] + [v for v in present if v not in order]


def _seed_lines(ax, frame: pd.DataFrame, x: str, y: str) -> None:
    for arch in _ordered(frame["arch"], ARCHS):
        label, color, marker = line_style(arch)
        sub = frame[frame["arch"] == arch]
        stats = sub.groupby(x)[y].agg(["mean", "min", "max"]).sort_index()
        ax.plot(stats.index, stats["mean"], marker=marker, color=color, label=label, lw=1.8, ms=5)
        ax.fill_between(stats.index, stats["min"], stats["max"], color=color, alpha=0.15, lw=0)
        ax.scatter(sub[x], sub[y], color=color, s=8, alpha=0.35, lw=0)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _layer_ticks(layers: list[int], most: int = 13) -> tuple[list[int], list[str]]:
    """Ticks in the paper's numbering (the embedding, then blocks L0, L1, ...), thinned
    to at most about ``most`` for 24-layer pretrained models."""
    step = max(1, -(-len(layers) // most))
    shown = [layer for i, layer in enumerate(layers) if i % step == 0 and len(layers) - 1 - i >= step / 2]
    shown.append(layers[-1])
    return shown, [layer_label(layer) for layer in shown]


def _layer_axis(ax, layers: list[int]) -> None:
    ax.set_xticks(*_layer_ticks(layers))
    ax.set_xlabel("layer")


def _task_row(n_tasks: int) -> tuple:
    """A row of panels, one per task, sharing the accuracy axis."""
    return plt.subplots(1, n_tasks, figsize=(max(3.8 * n_tasks, 6.4), 3.4), sharey=True, squeeze=False)


def _end_marker(ax, run: pd.DataFrame, marker: str, color: str, reached: bool) -> None:
    """Where a run's validation curve ends: filled where it reached its target, else hollow."""
    last = run.iloc[-1]
    ax.plot(
        last["step"],
        last["validation_token_accuracy"],
        marker,
        color=color,
        ms=6,
        mfc=color if reached else "white",
    )


def _save(fig: plt.Figure, paths: list[str | Path]) -> None:
    for path in paths:
        fmt = Path(path).suffix.lstrip(".")
        files.write_with(lambda tmp: fig.savefig(tmp, format=fmt, dpi=200, bbox_inches="tight"), path)
    plt.close(fig)


PROFILE_ROWS = {
    "probe_accuracy": "probe accuracy (held-out sequences)",
    "gain_over_untrained": "gain over the untrained twin\n(accuracy - untrained accuracy)",
}
"""The probe figure's rows: per-layer column of ``probes.csv`` and its axis label."""


def profile_rows(probes: pd.DataFrame) -> list[str]:
    """The rows of :func:`probe_profiles` this table fills (the gain row needs the twins)."""
    return [metric for metric in PROFILE_ROWS if metric in probes]


def probe_profiles(probes: pd.DataFrame, fit_length: int, paths: list[str | Path]) -> None:
    """Probe accuracy by layer for the training label: one panel per task, a line per
    architecture; below it the gain over the untrained twin (:func:`profile_rows`)."""
    frame = probes[(probes["target"] == "labels") & (probes["split"] == "probe")]
    tasks = _ordered(frame["task"], TASK_TITLE)
    metrics = profile_rows(frame)
    fig, axes = plt.subplots(
        len(metrics), len(tasks), figsize=(3.4 * len(tasks), 3.2 * len(metrics)), sharey="row", squeeze=False
    )
    for row, metric in zip(axes, metrics):
        for ax, task in zip(row, tasks):
            sub = frame[frame["task"] == task]
            _seed_lines(ax, sub, "layer", metric)
            if metric == "probe_accuracy":
                ax.axhline(sub["majority_baseline"].mean(), color="0.5", ls="--", lw=1, label="majority")
                ax.set_title(TASK_TITLE.get(task, task))
            else:
                ax.axhline(0, color="0.5", ls="--", lw=1)
            _layer_axis(ax, sorted(sub["layer"].unique()))
            ax.grid(alpha=0.3)
    for row, metric in zip(axes, metrics):
        row[0].set_ylabel(PROFILE_ROWS[metric])
    axes[0][-1].legend(fontsize=8, loc="lower right")
    n_seeds = frame.groupby(["arch", "task"])["seed"].nunique().min()
    fig.suptitle(
        f"Linear probe accuracy by layer (L = {fit_length}, {_count(n_seeds, 'seed')}, band = seed range)",
        fontsize=10,
    )
    fig.tight_layout()
    _save(fig, paths)


def behaviour(table: pd.DataFrame, train_length: int, paths: list[str | Path]) -> None:
    """Token and whole-sequence accuracy against evaluation length, one column per task."""
    tasks = _ordered(table["task"], TASK_TITLE)
    metrics = [("token_accuracy", "token accuracy"), ("sequence_accuracy", "sequence accuracy")]
    fig, axes = plt.subplots(
        2, len(tasks), figsize=(3.4 * len(tasks), 5.6), sharex=True, sharey="row", squeeze=False
    )
    for col, task in enumerate(tasks):
        sub = table[table["task"] == task]
        for row, (metric, label) in enumerate(metrics):
            ax = axes[row][col]
            _seed_lines(ax, sub, "eval_length", metric)
            ax.axvline(train_length, color="0.5", ls=":", lw=1)
            ax.set_ylim(-0.02, 1.02)
            ax.grid(alpha=0.3)
            if row == 0:
                ax.set_title(TASK_TITLE.get(task, task))
            else:
                ax.set_xlabel("evaluation length")
            if col == 0:
                ax.set_ylabel(label)
    axes[0][-1].legend(fontsize=8, loc="lower left")
    fig.suptitle(f"Behaviour vs length (trained at L = {train_length}; dotted line)", fontsize=10)
    fig.tight_layout()
    _save(fig, paths)


ERASURE_STYLE = {
    "probe": ("probe directions", "#d62728", "-"),
    "inlp": ("INLP", "#1f77b4", "-"),
    "leace": ("LEACE", "#2ca02c", "-"),
    "pca": ("top-k PCA", "#ff7f0e", "--"),
}


def erasure_profiles(erasures: pd.DataFrame, fit_length: int, paths: list[str | Path]) -> None:
    """Accuracy drop by layer for each erasure: a row per task, a column per architecture.

    Lines are means over seeds (``pca`` at its largest k). The grey band spans the mean
    drop of random subspaces of the probe erasure's rank at that layer (lowest to highest
    seed): the chance level the probe-direction erasure has to clear.
    """
    frame = erasures[erasures["eval_length"] == fit_length]
    tasks = _ordered(frame["task"], TASK_TITLE)
    archs = _ordered(frame["arch"], ARCHS)
    fig, axes = plt.subplots(
        len(tasks),
        len(archs),
        figsize=(2.6 * len(archs), 2.3 * len(tasks)),
        sharex=True,
        sharey=True,
        squeeze=False,
    )
    for row, task in enumerate(tasks):
        for col, arch in enumerate(archs):
            ax = axes[row][col]
            sub = frame[(frame["task"] == task) & (frame["arch"] == arch)]
            probe_rank = sub[sub["method"] == "probe"][["seed", "layer", "rank"]].drop_duplicates()
            random = sub[sub["method"] == "random"].merge(probe_rank, on=["seed", "layer", "rank"])
            band = random.groupby(["layer", "seed"])["drop"].mean().groupby("layer").agg(["min", "max"])
            ax.fill_between(
                band.index,
                band["min"],
                band["max"],
                color="0.6",
                alpha=0.35,
                lw=0,
                label="random (probe rank)",
            )
            for method, (label, color, style) in ERASURE_STYLE.items():
                part = sub[sub["method"] == method]
                if method == "pca" and not part.empty:
                    part = part[part["k"] == part["k"].max()]
                    label = f"{label} (k={int(part['k'].max())})"
                means = part.groupby("layer")["drop"].mean()
                ax.plot(means.index, means.values, style, color=color, marker="o", ms=3, lw=1.4, label=label)
            ax.axhline(0, color="0.3", lw=0.6)
            ax.grid(alpha=0.3)
            if row == 0:
                ax.set_title(display_name(arch), fontsize=9)
            if col == 0:
                ax.set_ylabel(f"{TASK_TITLE.get(task, task)}\naccuracy drop")
            if row == len(tasks) - 1:
                _layer_axis(ax, sorted(sub["layer"].unique()))
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), fontsize=8, frameon=False)
    fig.suptitle(f"Task accuracy lost when a subspace is erased at one layer (L = {fit_length})", fontsize=10)
    fig.tight_layout(rect=(0, 0.04, 1, 0.97))
    _save(fig, paths)


def erasure_ood(erasures: pd.DataFrame, readability: pd.DataFrame, paths: list[str | Path]) -> None:
    """Drop against evaluation length for the probe-direction erasure at each run's best probe layer."""
    best = readability[readability["method"] == "probe"][["arch", "task", "seed", "best_probe_layer"]]
    frame = erasures[erasures["method"] == "probe"].merge(best, on=["arch", "task", "seed"])
    frame = frame[frame["layer"] == frame["best_probe_layer"]]
    tasks = _ordered(frame["task"], TASK_TITLE)
    fig, axes = plt.subplots(1, len(tasks), figsize=(3.4 * len(tasks), 3.2), sharey=True, squeeze=False)
    for ax, task in zip(axes[0], tasks):
        _seed_lines(ax, frame[frame["task"] == task], "eval_length", "drop")
        ax.axhline(0, color="0.3", lw=0.6)
        ax.set_title(TASK_TITLE.get(task, task))
        ax.set_xlabel("evaluation length")
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("accuracy drop (probe directions,\nbest probe layer)")
    axes[0][-1].legend(fontsize=8)
    fig.suptitle("Erasures fit at the training length, applied unchanged at longer lengths", fontsize=10)
    fig.tight_layout()
    _save(fig, paths)


def pretrained_profiles(
    probes: pd.DataFrame, erasures: pd.DataFrame, fit_length: int, paths: list[str | Path]
) -> None:
    """Per pretrained model and task: where the label is readable (probe accuracy by
    layer) and where the model needs it (accuracy lost when the probe directions, or the
    top-k PCA subspace, are erased at that layer). A column per task, a colour per model."""
    readable = probes[(probes["target"] == "labels") & (probes["split"] == "probe")]
    erased = erasures[(erasures["eval_length"] == fit_length) & erasures["method"].isin(["probe", "pca"])]
    erased = erased[(erased["method"] == "probe") | (erased["k"] == erased["k"].max())]
    tasks = _ordered(readable["task"], TASK_TITLE)
    models = list(dict.fromkeys(readable["arch"]))
    colors = dict(zip(models, plt.get_cmap("tab10").colors))
    fig, axes = plt.subplots(2, len(tasks), figsize=(4.0 * len(tasks), 6.0), sharex="col", squeeze=False)
    for col, task in enumerate(tasks):
        top, bottom = axes[0][col], axes[1][col]
        for model in models:
            sub = readable[(readable["task"] == task) & (readable["arch"] == model)]
            accuracy = sub.groupby("layer")["probe_accuracy"].mean()
            top.plot(accuracy.index, accuracy.values, marker="o", ms=3, color=colors[model], label=model)
            for method, style in (("probe", "-"), ("pca", "--")):
                part = erased[
                    (erased["task"] == task) & (erased["arch"] == model) & (erased["method"] == method)
                ]
                drop = part.groupby("layer")["drop"].mean()
                bottom.plot(drop.index, drop.values, style, marker="o", ms=3, color=colors[model])
        top.axhline(readable[readable["task"] == task]["majority_baseline"].mean(), color="0.5", ls=":", lw=1)
        top.set_title(TASK_TITLE.get(task, task))
        bottom.axhline(0, color="0.3", lw=0.6)
        _layer_axis(bottom, sorted(readable[readable["task"] == task]["layer"].unique()))
        for ax in (top, bottom):
            ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("probe accuracy (held-out sequences)")
    k = erased.loc[erased["method"] == "pca", "k"].max()
    axes[1][0].set_ylabel(f"accuracy drop\n(solid: probe directions, dashed: top-{k} PCA)")
    axes[0][-1].legend(fontsize=8, loc="lower right")
    n_seeds = readable.groupby(["arch", "task"])["seed"].nunique().min()
    fig.suptitle(
        f"Pretrained models fine-tuned per task: readable vs necessary layers "
        f"(L = {fit_length}, mean over {_count(n_seeds, 'seed')})",
        fontsize=10,
    )
    fig.tight_layout()
    _save(fig, paths)


def conv1d(summary: pd.DataFrame, paths: list[str | Path]) -> None:
    """Accuracy change (pp) from an identity Conv1D: a panel per family, bars per task and ablation."""
    families = _ordered(summary["family"], ARCHS)
    variants = {
        "noconv_trained": ("trained without Conv1D", "#d62728"),
        "noconv_inference": ("removed at inference", "#7f7f7f"),
    }
    fig, axes = plt.subplots(1, len(families), figsize=(4.2 * len(families), 3.4), sharey=True, squeeze=False)
    for ax, family in zip(axes[0], families):
        sub = summary[summary["family"] == family]
        tasks = _ordered(sub["task"], TASK_TITLE)
        width = 0.8 / len(variants)
        for i, (variant, (label, color)) in enumerate(variants.items()):
            rows = sub[sub["variant"] == variant].set_index("task").reindex(tasks)
            x = [j + (i - (len(variants) - 1) / 2) * width for j in range(len(tasks))]
            error = [rows["difference_pp"] - rows["ci_low"], rows["ci_high"] - rows["difference_pp"]]
            ax.bar(x, rows["difference_pp"], width, color=color, label=label, yerr=error, capsize=3)
            for xi, (_, row) in zip(x, rows.iterrows()):
                if row.get("significant") is True:
                    ax.annotate("*", (xi, row["ci_high"]), ha="center", va="bottom")
        ax.axhline(0, color="0.3", lw=0.8)
        ax.set_xticks(range(len(tasks)), [TASK_TITLE.get(t, t) for t in tasks])
        ax.set_title(display_name(family))
        ax.grid(alpha=0.3, axis="y")
    axes[0][0].set_ylabel("token accuracy change (pp)")
    axes[0][-1].legend(fontsize=8)
    n_seeds = int(summary["n_seeds"].min())
    fig.suptitle(f"Conv1D attribution ({_count(n_seeds, 'seed')}, whiskers = 95 % CI)", fontsize=10)
    fig.tight_layout()
    _save(fig, paths)


def patching_heatmaps(table: pd.DataFrame, paths: list[str | Path]) -> None:
    """Denoising activation patching: fraction of the logit difference recovered by patching
    one (layer, position) state, mean over seeds; a row per architecture, a column per task.

    The colour scale is shared and clipped to [0, 1]; grey cells were not measured (no
    pair has its metric position at or after that position).
    """
    frame = table[table["direction"] == "denoising"]
    tasks = _ordered(frame["task"], TASK_TITLE)
    archs = _ordered(frame["arch"], ARCHS)
    fig, axes = plt.subplots(
        len(archs),
        len(tasks),
        figsize=(3.2 * len(tasks) + 1.0, 2.1 * len(archs) + 0.6),
        squeeze=False,
        layout="constrained",
    )
    cmap = plt.get_cmap("viridis").with_extremes(bad="0.85")
    image = None
    for row, arch in enumerate(archs):
        for col, task in enumerate(tasks):
            ax = axes[row][col]
            sub = frame[(frame["arch"] == arch) & (frame["task"] == task)]
            if sub.empty:
                ax.axis("off")
                continue
            grid = sub.groupby(["layer", "position"])["fraction"].mean().unstack("position")
            layers = range(int(grid.index.max()) + 1)
            positions = range(int(grid.columns.max()) + 1)
            grid = grid.reindex(index=layers, columns=positions)
            image = ax.imshow(
                grid.clip(0, 1).to_numpy(dtype=float),
                origin="lower",
                aspect="auto",
                cmap=cmap,
                vmin=0,
                vmax=1,
                interpolation="nearest",
            )
            ax.set_yticks(*_layer_ticks(list(layers)))
            if row == 0:
                ax.set_title(TASK_TITLE.get(task, task))
            if col == 0:
                ax.set_ylabel(f"{display_name(arch)}\nlayer")
            if row == len(archs) - 1:
                ax.set_xlabel("patched position")
    if image is not None:
        fig.colorbar(image, ax=axes, shrink=0.8, label="fraction of logit difference recovered")
    n_seeds = frame.groupby(["arch", "task"])["seed"].nunique().min()
    fig.suptitle(
        "Activation patching (clean state into corrupted run): fraction of logit difference "
        f"recovered, mean over {_count(n_seeds, 'seed')}",
        fontsize=10,
    )
    _save(fig, paths)


SEED_STYLES = ("-", "--", ":", "-.")


def learning_curves(curves: pd.DataFrame, training: pd.DataFrame, paths: list[str | Path]) -> None:
    """Validation token accuracy against step, a panel per task, a colour per architecture
    and a line per seed; a line ends where its run stopped, with a filled marker where it
    reached the criterion (dashed grey line) and a hollow one where it ran out of steps."""
    tasks = _ordered(curves["task"], TASK_TITLE)
    fig, axes = _task_row(len(tasks))
    ends = training.set_index(["arch", "task", "seed"])
    for ax, task in zip(axes[0], tasks):
        sub = curves[curves["task"] == task]
        for arch in _ordered(sub["arch"], ARCHS):
            label, color, marker = line_style(arch)
            for i, (seed, run) in enumerate(sub[sub["arch"] == arch].groupby("seed")):
                run = run.sort_values("step")
                style = SEED_STYLES[i % len(SEED_STYLES)]
                ax.plot(
                    run["step"],
                    run["validation_token_accuracy"],
                    style,
                    color=color,
                    lw=1.3,
                    label=label if i == 0 else None,
                )
                _end_marker(ax, run, marker, color, bool(ends.loc[(arch, task, seed), "reached"]))
        for target in training.loc[training["task"] == task, "target_accuracy"].unique():
            ax.axhline(target, color="0.5", ls="--", lw=1)
        ax.set_title(TASK_TITLE.get(task, task))
        ax.set_xlabel("training step")
        ax.set_ylim(-0.02, 1.02)
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("validation token accuracy")
    axes[0][-1].legend(fontsize=8, loc="lower right")
    n_seeds = curves.groupby(["arch", "task"])["seed"].nunique().max()
    length = int(training["train_length"].iloc[0])
    fig.suptitle(
        f"Learning curves at L = {length} ({_count(n_seeds, 'seed')}, a line style per seed; "
        "filled end: criterion reached, hollow: stopped at max_steps)",
        fontsize=10,
    )
    fig.tight_layout()
    _save(fig, paths)


def learnability(
    curves: pd.DataFrame, table: pd.DataFrame, paths: list[str | Path], criterion: float
) -> None:
    """Validation token accuracy against step (log scale) of every pair's learnability run,
    a panel per task, a colour per architecture; dashed lines at the thresholds, a filled
    end marker where the run reached the stopping ``criterion`` (``training.target_accuracy``)
    and a hollow one where it never did."""
    tasks = _ordered(curves["task"], TASK_TITLE)
    fig, axes = _task_row(len(tasks))
    ends = table.set_index(["arch", "task"])
    for ax, task in zip(axes[0], tasks):
        sub = curves[curves["task"] == task]
        for arch in _ordered(sub["arch"], ARCHS):
            label, color, marker = line_style(arch)
            run = sub[sub["arch"] == arch].sort_values("step")
            ax.plot(run["step"], run["validation_token_accuracy"], "-", color=color, lw=1.3, label=label)
            _end_marker(ax, run, marker, color, pd.notna(ends.loc[(arch, task), "steps_to_99"]))
        for threshold in thresholds(criterion).values():
            ax.axhline(threshold, color="0.5", ls="--", lw=1)
        ax.set_xscale("log")
        ax.xaxis.set_major_formatter(ScalarFormatter())
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_title(TASK_TITLE.get(task, task))
        ax.set_xlabel("training step")
        ax.set_ylim(-0.02, 1.02)
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("validation token accuracy")
    axes[0][-1].legend(fontsize=8, loc="lower right")
    fig.suptitle(
        f"Learnability: seed 0 of every pair, to at most {int(table['cap'].max())} steps "
        f"(filled end: reached {criterion:g}; hollow: never did)",
        fontsize=10,
    )
    fig.tight_layout()
    _save(fig, paths)


def sweep(table: pd.DataFrame, paths: list[str | Path]) -> None:
    """Final validation token accuracy of each sweep point against the learning rate, a
    panel per task, a colour per architecture and a line style per variant (block, start
    token, batch size: :func:`statelayers.sweep.variant_names`); filled markers where every
    seed reached the criterion, a ring around each selected point."""
    tasks = _ordered(table["task"], TASK_TITLE)
    table = table.assign(_variant=variant_names(table))
    variants = sorted(table["_variant"].unique())
    fig, axes = _task_row(len(tasks))
    for ax, task in zip(axes[0], tasks):
        sub = table[table["task"] == task]
        for arch in _ordered(sub["arch"], ARCHS):
            label, color, marker = line_style(arch)
            for i, variant in enumerate(variants):
                points = sub[(sub["arch"] == arch) & (sub["_variant"] == variant)].sort_values("lr")
                if points.empty:
                    continue
                name = f"{label}, {variant}" if variant else label
                ax.plot(
                    points["lr"],
                    points["validation_token_accuracy"],
                    SEED_STYLES[i % len(SEED_STYLES)],
                    color=color,
                    lw=1.3,
                    label=name,
                )
                every = points["reached"] == points["seeds"]
                for filled, part in points.groupby(every):
                    ax.plot(
                        part["lr"],
                        part["validation_token_accuracy"],
                        marker,
                        ls="none",
                        color=color,
                        ms=5,
                        mfc=color if filled else "white",
                    )
            selected = sub[(sub["arch"] == arch) & sub["selected"]]
            ax.plot(
                selected["lr"], selected["validation_token_accuracy"], "o", ms=13, mfc="none", color=color
            )
            chosen = sub[(sub["arch"] == arch) & sub["chosen"]]
            ax.plot(
                chosen["lr"], chosen["validation_token_accuracy"], "s", ms=17, mfc="none", color=color, lw=0.8
            )
        for target in sub["target_accuracy"].unique():
            ax.axhline(target, color="0.5", ls="--", lw=1)
        ax.set_xscale("log")
        ax.minorticks_off()
        lrs = sorted(table["lr"].unique())
        ax.set_xticks(lrs, [f"{lr:g}" for lr in lrs])
        ax.set_title(TASK_TITLE.get(task, task))
        ax.set_xlabel("learning rate")
        ax.set_ylim(-0.02, 1.02)
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("final validation token accuracy")
    if len(variants) == 1:
        axes[0][-1].legend(fontsize=7, loc="lower left")
    else:  # a line per architecture and variant: too many to sit inside a panel
        axes[0][-1].legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.02, 1.0))
    max_steps = int(table["max_steps"].max())
    n_seeds = int(table["seeds"].max())
    fig.suptitle(
        f"Sweep: at most {max_steps} steps per run at the smallest batch, {_count(n_seeds, 'seed')} per point "
        "(filled: every seed reached the criterion; ring: best for the task;\n"
        "square: chosen for the architecture)",
        fontsize=10,
    )
    fig.tight_layout()
    _save(fig, paths)
