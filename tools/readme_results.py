"""Replace README.md's results section with the latest complete run in this directory
(claims, behaviour summary, training table, and the Conv1D summary when measured).

The run is the Snakemake log (``.snakemake/log``) with the most jobs among those that
finished, the newest on ties: the full run, not a later partial rerun. Complete runs
after it (an overlay such as ``config/conv1d.yaml``, which only adds jobs) are named
after it, since the result files include their work. The Conv1D table is included when
the claims check measured finding 7, the sweep table when `snakemake sweep` ran here
(else the committed benchmarks/sweep.csv, the sweep the defaults came from),
the budget each pair needs when benchmarks/learnability.csv exists (beside the paper's
step budget from config/paper.yaml).
The probe figure is copied to docs/ beside the README, which links it.
Usage: python tools/readme_results.py [README.md]
"""

import shutil
import sys
from datetime import datetime
from pathlib import Path

import pandas as pd
import yaml

from statelayers.report.readme import replace_section, results_section
from statelayers.report.snakemake_log import complete_run

readme = Path(sys.argv[1] if len(sys.argv) > 1 else "README.md")
SWEEPS = (
    Path("results/tables/sweep.csv"),  # `snakemake sweep`, run in this directory
    Path("benchmarks/sweep.csv"),  # else the committed sweep the defaults came from
)
LEARNABILITY = Path("benchmarks/learnability.csv")  # `snakemake learnability`, committed
PAPER = Path(__file__).resolve().parents[1] / "config" / "paper.yaml"  # this checkout's paper scale
FIGURE = Path("results/figures/probe_profiles.png")
shown = Path("docs/probe_profiles.png")  # beside the README, which results/ (git-ignored) is not


def read_sweep(path: Path) -> pd.DataFrame:
    """The sweep table; one written before the sweep varied blocks and start tokens swept
    the study's block without a start token."""
    sweep = pd.read_csv(path)
    missing = {"block": "default", "start_token": False}
    return sweep.assign(**{column: value for column, value in missing.items() if column not in sweep})


runs = []  # (log name, jobs, elapsed), oldest first: log names start with their start time
for log in sorted(Path(".snakemake/log").glob("*.snakemake.log")):
    found = complete_run(log.read_text(errors="ignore"))
    if found:
        runs.append((log.name, *found))
if not runs:
    sys.exit("no complete Snakemake run found under .snakemake/log")
base = max(range(len(runs)), key=lambda i: (runs[i][1], i))
started = datetime.strptime(runs[base][0][:17], "%Y-%m-%dT%H%M%S")
run_time = "; then ".join(f"{jobs} jobs, Snakemake wall time {elapsed}" for _, jobs, elapsed in runs[base:])
claims = pd.read_csv("results/claims.csv")
conv1d_measured = claims.set_index("finding")["measured"].notna().get(7, False)
section = results_section(
    claims,
    pd.read_csv("results/tables/behaviour_summary.csv"),
    pd.read_csv("results/tables/training.csv"),
    date=started.strftime("%Y-%m-%d"),
    run_time=run_time,
    conv1d_summary=pd.read_csv("results/tables/conv1d_summary.csv") if conv1d_measured else None,
    sweep=next((read_sweep(path) for path in SWEEPS if path.exists()), None),
    probe_figure=shown.as_posix(),
    learnability=pd.read_csv(LEARNABILITY) if LEARNABILITY.exists() else None,
    paper_steps=yaml.safe_load(PAPER.read_text())["training"]["max_steps"],
)
(readme.parent / shown).parent.mkdir(parents=True, exist_ok=True)
shutil.copyfile(FIGURE, readme.parent / shown)
readme.write_text(replace_section(readme.read_text(), section))
print(f"README results section from the run started {started} ({run_time})")
