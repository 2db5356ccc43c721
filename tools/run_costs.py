"""Print a run's cost from its Snakemake benchmarks (``results/benchmarks``).

Per stage: job count, CPU seconds and wall seconds summed; per architecture: the
range of training-job wall times and the wall time of probes plus erasures as a
share of training, over all runs and per run (min-max); the untrained twins' share of
all job wall time (their save-and-evaluate jobs and their probes). The cost section of
docs/cost.md quotes this output.
Usage: python tools/run_costs.py [results/benchmarks]
"""

import sys
from pathlib import Path

import pandas as pd

root = Path(sys.argv[1] if len(sys.argv) > 1 else "results/benchmarks")
rows = []
for path in root.rglob("*.tsv"):
    parts = path.relative_to(root).with_suffix("").parts
    if len(parts) > 1 and parts[1] == "untrained":  # a twin's probes: probes/untrained/arch/task/seedN
        parts = ("untrained", *parts[2:]) if parts[0] == "probes" else parts
    bench = pd.read_csv(path, sep="\t").iloc[-1]  # the last attempt, the one that produced the output
    per_run = len(parts) == 4  # stage/arch/task/seedN
    rows.append(
        {
            "stage": parts[0],
            "run": "/".join(parts[1:]) if per_run else None,
            "arch": parts[1] if per_run else None,
            "wall_s": float(bench["s"]),
            "cpu_s": float(bench["cpu_time"]),
        }
    )
jobs = pd.DataFrame(rows)
main_stages = ["train", "untrained", "evaluate", "probes", "erasures", "patching", "conv1d"]
jobs["group"] = jobs["stage"].where(jobs["stage"].isin(main_stages), "data, tables, figures, claims")
print("| stage | jobs | CPU s (wall s) |\n| --- | --- | --- |")
for group, frame in jobs.groupby("group"):
    print(f"| {group} | {len(frame)} | {frame['cpu_s'].sum():.0f} ({frame['wall_s'].sum():.0f}) |")

runs = jobs.dropna(subset=["run"]).pivot_table(index=["arch", "run"], columns="stage", values="wall_s")
train = runs["train"]
analysis = runs.reindex(columns=["probes", "erasures"]).fillna(0).sum(axis=1)
share = analysis / train
print("\n| arch | training job wall s | probes + erasures / training, all (per run) |")
print("| --- | --- | --- |")
for arch in train.index.get_level_values("arch").unique():
    t, s = train.loc[arch], share.loc[arch]
    total = analysis.loc[arch].sum() / t.sum()
    print(f"| {arch} | {t.min():.0f}-{t.max():.0f} | {total:.0%} ({s.min():.0%}-{s.max():.0%}) |")
other = jobs.loc[~jobs["stage"].isin(["train", "erasures"]), "wall_s"].sum()
print(f"\nneither training nor erasures: {other / train.sum():.1%} of training wall time")
twins = jobs.loc[jobs["stage"] == "untrained", "wall_s"].sum()
print(
    f"untrained twins (saved, evaluated and probed): {twins / jobs['wall_s'].sum():.1%} of all job wall time"
)
