"""Fit every probe of a finished run with each logistic-regression solver: iterations, time, accuracy.

Usage: ``python benchmarks/probe_solver.py RESULTS [--csv PATH] [--length 40]``

For every ``RESULTS/states/**/probe_L{length}.parquet`` (trained runs and untrained
twins), every layer and target, and the target's Hewitt-Liang control task, the probe of
:mod:`statelayers.measure.probes` (standardised states, C = 1, the same split) is fit
with each setting of ``SOLVERS``. ``--csv`` writes ``path, layer, target, solver,
max_iter, n_iter, converged, seconds, probe_accuracy``. Run it with one thread
(``OMP_NUM_THREADS=1``) and nothing else on the machine when the seconds matter.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from dataclasses import replace

import numpy as np
import pandas as pd
import yaml

from statelayers.measure.probes import ProbeConfig, control_labels, fit_probe
from statelayers.measure.states import TARGET_COLUMNS, read_layers

CONFIG = Path(__file__).parents[1] / "config" / "config.yaml"
STUDY = ProbeConfig(**yaml.safe_load(CONFIG.read_text())["probes"])
"""The study's probe: ``probes`` of config/config.yaml."""
SOLVERS = {
    "lbfgs_200": replace(STUDY, solver="lbfgs", max_iter=200),
    "newton-cg_100": replace(STUDY, solver="newton-cg", max_iter=100),
}
"""L-BFGS within 200 iterations (the budget before Newton-CG) and Newton-CG within 100,
each otherwise the study's probe."""


def solver_rows(path: Path, root: Path) -> list[dict]:
    layers = list(read_layers(path))
    n_types = 1 + max(int(columns["token"].max()) for _, columns in layers)
    rows = []
    for layer, columns in layers:
        tokens = columns["token"].astype(np.int64)
        for target in (t for t in TARGET_COLUMNS if t in columns):
            y = columns[target]
            control = control_labels(n_types, y, STUDY.seed)[tokens]
            for name, labels in ((target, y), (f"control_{target}", control)):
                for solver, config in SOLVERS.items():
                    start = time.perf_counter()
                    probe, scores = fit_probe(columns["vector"], labels, columns["seq_id"], config)
                    rows.append(
                        {
                            "path": str(path.relative_to(root)),
                            "layer": layer,
                            "target": name,
                            "solver": config.solver,
                            "max_iter": config.max_iter,
                            "n_iter": int(np.max(probe[-1].n_iter_)),
                            "converged": scores["converged"],
                            "seconds": round(time.perf_counter() - start, 4),
                            "probe_accuracy": scores["probe_accuracy"],
                        }
                    )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path)
    parser.add_argument("--csv", type=Path)
    parser.add_argument("--length", type=int, default=40)
    args = parser.parse_args()
    root = args.results / "states"
    rows = []
    for path in sorted(root.glob(f"**/probe_L{args.length}.parquet")):
        rows += solver_rows(path, root)
        print(path.relative_to(root), flush=True)
    table = pd.DataFrame(rows)
    if args.csv:
        table.to_csv(args.csv, index=False)
    summary = table.groupby(["solver", "max_iter"]).agg(
        probes=("n_iter", "size"),
        converged=("converged", "sum"),
        max_n_iter=("n_iter", "max"),
        seconds=("seconds", "sum"),
    )
    print(summary.to_string())


if __name__ == "__main__":
    main()
