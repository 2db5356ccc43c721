"""Why S3 is not learned: each model's S3 errors split into sign and rotation errors, and
both parts of the state probed per layer, on the checkpoints of a finished run.

S3 = A3 ⋊ Z2 (:mod:`statelayers.tasks.s3_structure`): the sign of a prefix is a parity
task inside S3; the rotation within the coset needs the sign to compose. For every run
of the given architectures on s3 it writes

- ``OUT_errors.csv``: per (arch, seed, eval_length), the test token accuracy, the share
  of tokens with the wrong sign (``sign_error``) and with the right sign but the wrong
  rotation (``coset_error``), the sign accuracy, and the accuracy among right-sign tokens;
- ``OUT_probes.csv``: per (arch, seed, layer), a probe's held-out accuracy on the stored
  probe-split states (config.yaml's ``probes`` settings) for the whole label, its sign
  and its rotation, each with its majority baseline.

    python benchmarks/s3_structure.py RESULTS OUT [--archs transformer mamba mamba2] [--probe-seeds 0]

(``--probe-seeds``: the seeds whose layers are probed; every seed's errors are split.)
"""

import argparse
from pathlib import Path

import numpy as np
import pandas as pd
import torch
import yaml

from statelayers import files
from statelayers.measure.probes import ProbeConfig, fit_probe
from statelayers.measure.states import read_layers
from statelayers.models.inference import predict
from statelayers.models.registry import SSM, base_arch
from statelayers.models.tagger import load_model
from statelayers.tasks.data import to_arrays
from statelayers.tasks.s3_structure import error_split, probe_targets

CONFIG = yaml.safe_load((Path(__file__).parents[1] / "config" / "config.yaml").read_text())


def run_dirs(results: Path, arch: str) -> list[tuple[int, Path]]:
    runs = sorted((results / "models" / arch / "s3").glob("seed*"))
    return [(int(path.name[4:]), path) for path in runs if (path / "model.pt").exists()]


def errors(results: Path, arch: str, seed: int, run: Path) -> list[dict]:
    training = CONFIG["training"]
    mamba = {"backend": training["mamba_backend"], "scan": training["mamba_scan"]} if base_arch(arch) in SSM else None
    model = load_model(run, mamba, "cpu")
    rows = []
    for length in CONFIG["eval_lengths"]:
        data = to_arrays(files.read_parquet(results / "data" / "s3" / f"test_L{length}.parquet"))
        predicted = predict(model, data["tokens"])[0]
        split = error_split(predicted, data["labels"])
        rows.append(
            {"arch": arch, "seed": seed, "eval_length": length, "sequences": len(data["tokens"]),
             **split[["accuracy", "sign_error", "coset_error", "sign_accuracy"]].mean().to_dict(),
             "rotation_accuracy_given_sign": float(np.nanmean(split["rotation_accuracy_given_sign"]))}  # fmt: skip
        )
    return rows


def probes(results: Path, arch: str, seed: int) -> list[dict]:
    config = ProbeConfig(**CONFIG["probes"])
    path = results / "states" / arch / "s3" / f"seed{seed}" / f"probe_L{CONFIG['train_length']}.parquet"
    rows = []
    for layer, columns in read_layers(path):
        X, groups = columns["vector"].astype(np.float64), columns["seq_id"]
        targets = {"labels": columns["labels"], **probe_targets(columns["labels"])}
        for target, y in targets.items():
            _, scores = fit_probe(X, y, groups, config)
            rows.append({"arch": arch, "seed": seed, "layer": layer, "target": target,
                         "probe_accuracy": scores["probe_accuracy"],
                         "majority_baseline": scores["majority_baseline"]})  # fmt: skip
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("results", type=Path)
    parser.add_argument("out", type=Path, help="prefix: writes OUT_errors.csv and OUT_probes.csv")
    parser.add_argument("--archs", nargs="+", default=["transformer", "mamba", "mamba2"])
    parser.add_argument("--probe-seeds", type=int, nargs="+", help="probe only these seeds (default: all)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    error_rows, probe_rows = [], []
    for arch in args.archs:
        for seed, run in run_dirs(args.results, arch):
            error_rows += errors(args.results, arch, seed, run)
            if args.probe_seeds is None or seed in args.probe_seeds:
                probe_rows += probes(args.results, arch, seed)
            print(arch, seed, "done", flush=True)
    files.write_csv(pd.DataFrame(error_rows), f"{args.out}_errors.csv")
    files.write_csv(pd.DataFrame(probe_rows), f"{args.out}_probes.csv")


if __name__ == "__main__":
    main()
