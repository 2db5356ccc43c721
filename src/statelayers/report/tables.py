"""Study-wide tables built from the per-run records: the parameter counts of the
models, and per run where it is most readable against where it is most necessary."""

from __future__ import annotations

import pandas as pd


def params_table(metas: list[dict], target: int, tolerance: float = 0.10) -> pd.DataFrame:
    """One row per (arch, task) from saved ``model.json`` records: count, knob, deviation."""
    rows = {}
    for meta in metas:
        spec = meta["spec"]
        key = (spec["arch"], meta["task"])
        if key in rows and rows[key]["params"] != meta["params"]:
            raise ValueError(f"seeds of {key} disagree on the parameter count")
        rows[key] = {
            "arch": spec["arch"],
            "task": meta["task"],
            "width": spec["width"],
            "params": meta["params"],
        }
    frame = pd.DataFrame(rows.values()).astype({"width": "Int64"})
    frame["target_params"] = target
    frame["relative_deviation"] = frame["params"] / target - 1
    frame["within_tolerance"] = frame["relative_deviation"].abs() <= tolerance
    return frame


def readability_vs_causality(probes: pd.DataFrame, erasures: pd.DataFrame) -> pd.DataFrame:
    """Per run and erasure method: the most readable layer against the most necessary one.

    Readability: held-out probe accuracy on the training label (``split == "probe"``).
    Necessity: the drop in task accuracy at the training length when the method's
    erasure is applied at that layer, beside the mean drop of random subspaces of the
    same rank at the same layer. Ties go to the earliest layer.
    """
    key = ["arch", "task", "seed"]
    readable = probes[(probes["split"] == "probe") & (probes["target"] == "labels")]
    fit_length = readable["eval_length"].iloc[0]
    at_fit = erasures[erasures["eval_length"] == fit_length]
    random = at_fit[at_fit["method"] == "random"].groupby([*key, "layer", "rank"])["drop"].mean()
    rows = []
    for run, run_probes in readable.groupby(key):
        best = run_probes.sort_values(["probe_accuracy", "layer"], ascending=[False, True]).iloc[0]
        run_erasures = at_fit.set_index(key).loc[[run]].reset_index()
        for method in ("probe", "inlp", "leace"):
            by_layer = run_erasures[run_erasures["method"] == method].sort_values("layer")
            if by_layer.empty:
                continue
            causal = by_layer.sort_values(["drop", "layer"], ascending=[False, True]).iloc[0]
            at_best = by_layer[by_layer["layer"] == best["layer"]].iloc[0]
            rows.append(
                {
                    **dict(zip(key, run)),
                    "method": method,
                    "best_probe_layer": int(best["layer"]),
                    "best_probe_accuracy": best["probe_accuracy"],
                    "most_causal_layer": int(causal["layer"]),
                    "max_drop": causal["drop"],
                    "random_drop_at_most_causal": random.get(
                        (*run, causal["layer"], causal["rank"]), float("nan")
                    ),
                    "refit_probe_accuracy_at_most_causal": causal["refit_probe_accuracy"],
                    "drop_at_best_probe_layer": at_best["drop"],
                    "refit_probe_accuracy_at_best_probe_layer": at_best["refit_probe_accuracy"],
                    "same_layer": int(best["layer"]) == int(causal["layer"]),
                }
            )
    return pd.DataFrame(rows)
