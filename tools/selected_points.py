"""Print the config keys that train each swept pair at the point the sweep selected.

Usage: python tools/selected_points.py [SWEEP_TABLE] [CONFIG]
(defaults: results/tables/sweep.csv and config/config.yaml, whose ``sweep.blocks`` name
the blocks). Prints YAML with ``training.overrides`` and ``model.options`` under
``arch/task`` keys, to merge into the config by hand; selection on validation accuracy
only (statelayers.sweep).
"""

import sys
from pathlib import Path

import pandas as pd
import yaml

from statelayers.sweep import selected_settings

args = sys.argv[1:]
if len(args) > 2:
    sys.exit(__doc__)
table_path = args[0] if args else "results/tables/sweep.csv"
config_path = args[1] if len(args) > 1 else "config/config.yaml"
blocks = yaml.safe_load(Path(config_path).read_text())["sweep"]["blocks"]
print(yaml.safe_dump(selected_settings(pd.read_csv(table_path), blocks), sort_keys=False), end="")
