"""What the erasures' test sequences buy and cost: each drop's standard error (the sequence
as unit, ``drop_se``) and the erasure job's time, at several ``erasures.sequences``, on
trained runs of a finished default study.

Runs the same library call as the erasures rule (``erasure_rows``) with config.yaml's
settings on one thread, changing only how many test sequences per length it reads, and
writes a row per (run, sequences): seconds, and the largest and median standard error of
the probe-direction drops at every layer and length, and of every drop.

    python benchmarks/erasure_sequences.py RESULTS OUT.csv RUN [RUN ...] --sequences 12 48
    (RUN is arch/task/seed, e.g. mamba/dyck/0)
"""

import argparse
import time
from pathlib import Path

import pandas as pd
import torch
import yaml

from statelayers import files
from statelayers.measure.erasures import ErasureConfig, erasure_rows
from statelayers.measure.probes import ProbeConfig
from statelayers.models.registry import SSM, base_arch
from statelayers.models.tagger import load_model
from statelayers.settings import erasure_settings
from statelayers.tasks.data import to_arrays

CONFIG = yaml.safe_load((Path(__file__).parents[1] / "config" / "config.yaml").read_text())


def measure(results: Path, arch: str, task: str, seed: int, sequences: int) -> dict:
    settings = erasure_settings(CONFIG, pretrained=False)
    settings.pop("sequences")
    config = ErasureConfig.from_settings(settings)
    training = CONFIG["training"]
    mamba = {"backend": training["mamba_backend"], "scan": training["mamba_scan"]} if base_arch(arch) in SSM else None
    run = results / "models" / arch / task / f"seed{seed}"
    model = load_model(run, mamba, "cpu")
    test_data = {
        length: to_arrays(files.read_parquet(results / "data" / task / f"test_L{length}.parquet").head(sequences))
        for length in CONFIG["erasures"]["eval_lengths"]
    }
    probe_states = results / "states" / arch / task / f"seed{seed}" / f"probe_L{CONFIG['train_length']}.parquet"
    start = time.perf_counter()
    rows = pd.DataFrame(
        erasure_rows(model, str(probe_states), test_data, config, ProbeConfig(**CONFIG["probes"]), run_seed=seed)
    )
    seconds = time.perf_counter() - start
    probe = rows[rows["method"] == "probe"]
    return {
        "arch": arch,
        "task": task,
        "seed": seed,
        "sequences": sequences,
        "seconds": round(seconds, 1),
        "probe_drop_se_max": probe["drop_se"].max(),
        "probe_drop_se_median": probe["drop_se"].median(),
        "drop_se_max": rows["drop_se"].max(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("results", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("runs", nargs="+")
    parser.add_argument("--sequences", type=int, nargs="+", default=[12, 48])
    args = parser.parse_args()
    torch.set_num_threads(1)
    measured = []
    for run in args.runs:
        arch, task, seed = run.split("/")
        for sequences in args.sequences:
            measured.append(measure(args.results, arch, task, int(seed), sequences))
            print(measured[-1], flush=True)
    files.write_csv(pd.DataFrame(measured), args.out)


if __name__ == "__main__":
    main()
