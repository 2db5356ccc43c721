"""Join sweeps of one grid run under different schedules into one schedule-sweep table.

Usage: python tools/schedule_sweep.py OUT DIR [DIR ...]
Each DIR is a directory where `snakemake sweep` ran with its own `config/config.yaml`
(the pairs' step budget in `sweep.pairs`, their `decay_fraction` in
`training.overrides`). Writes OUT: every DIR's `results/tables/sweep.csv` with the
`decay_fraction` its config trained each pair with, the selected point per pair marked
across schedules (statelayers.sweep.schedule_table; validation accuracy only).
`python tools/selected_points.py OUT` prints the config keys of the selected points.
"""

import sys
from pathlib import Path

import pandas as pd
import yaml

from statelayers import files
from statelayers.settings import train_settings
from statelayers.sweep import schedule_table


def with_decay(directory: Path) -> pd.DataFrame:
    """One directory's sweep table with each pair's decay fraction from its config."""
    config = yaml.safe_load((directory / "config/config.yaml").read_text())
    table = pd.read_csv(directory / "results/tables/sweep.csv")
    decay = [
        train_settings(config, arch, task)["decay_fraction"]
        for arch, task in zip(table["arch"], table["task"])
    ]
    return table.assign(decay_fraction=decay)


if len(sys.argv) < 3:
    sys.exit(__doc__)
files.write_csv(schedule_table([with_decay(Path(d)) for d in sys.argv[2:]]), sys.argv[1])
