"""Write README.md's verdict table and docs/results.md from the latest complete run in
this directory (claims, behaviour summary, training table, the Conv1D summary when
measured, the extension's verdicts when an overlay ran one), and the committed benchmark
tables.

The run is the Snakemake log (``.snakemake/log``) with the most jobs among those that
finished, the newest on ties: the full run, not a later partial rerun. Complete runs
after it (an overlay such as ``config/conv1d.yaml``, which only adds jobs) are named
after it, since the result files include their work. docs/results.md adds the Conv1D
table when the claims check measured finding 7; the budget each pair needs when
benchmarks/learnability.csv exists (beside the paper's step budget from
config/paper.yaml); and the sweeps: results/tables/sweep.csv when `snakemake sweep` ran
here, then every committed benchmarks/sweep*.csv, each selected point marked where
config/config.yaml trains the pair at another point. The probe figure is copied to
docs/, which README.md and docs/results.md link. Without a complete run, README's block
says so and docs/results.md holds the benchmark sections only.
Usage: python tools/readme_results.py [README.md]
"""

import shutil
import sys
from datetime import datetime
from pathlib import Path

import pandas as pd
import yaml

from statelayers.report.learnability import budget_outcomes
from statelayers.report.readme import (
    paper_budget_markdown,
    readme_block,
    replace_section,
    results_document,
)
from statelayers.report.snakemake_log import complete_run
from statelayers.settings import model_spec, train_settings
from statelayers.sweep import configured_point, sweep_blocks

readme = Path(sys.argv[1] if len(sys.argv) > 1 else "README.md")
results_md = readme.parent / "docs" / "results.md"
REPO_CONFIG = Path(__file__).resolve().parents[1] / "config"  # this checkout's configs
CONFIG = Path("config/config.yaml") if Path("config/config.yaml").exists() else REPO_CONFIG / "config.yaml"
PAPER = REPO_CONFIG / "paper.yaml"
RUN_SWEEP = Path("results/tables/sweep.csv")  # `snakemake sweep`, run in this directory
COMMITTED_SWEEPS = sorted(Path("benchmarks").glob("sweep*.csv"))  # the sweeps the defaults come from
LEARNABILITY = sorted(  # `snakemake learnability`, committed: the default cap's table, then any longer ones
    path for path in Path("benchmarks").glob("learnability*.csv") if not path.stem.endswith("_curves")
)
FIGURE = Path("results/figures/probe_profiles.png")
ROBUSTNESS = Path("results/robustness.csv")
EXTENSION = Path("results/extension_claims.csv")  # an overlay with a signed variant (config/s3.yaml)
shown = Path("docs/probe_profiles.png")  # beside the docs, which results/ (git-ignored) is not


def read_sweep(path: Path) -> pd.DataFrame:
    """The sweep table; one written before the sweep varied blocks and start tokens swept
    the study's block without a start token."""
    sweep = pd.read_csv(path)
    missing = {"block": "default", "start_token": False}
    return sweep.assign(**{column: value for column, value in missing.items() if column not in sweep})


config = yaml.safe_load(CONFIG.read_text())
sweeps = {path.as_posix(): read_sweep(path) for path in [RUN_SWEEP, *COMMITTED_SWEEPS] if path.exists()}
pairs = {(arch, task) for sweep in sweeps.values() for arch, task in zip(sweep["arch"], sweep["task"])}
configured = {
    (arch, task): configured_point(
        model_spec(config, arch, task)["options"],
        train_settings(config, arch, task),
        sweep_blocks(config, arch),
    )
    for arch, task in pairs
}
paper_steps = yaml.safe_load(PAPER.read_text())["training"]["max_steps"]
learnability = pd.concat(map(pd.read_csv, LEARNABILITY), ignore_index=True) if LEARNABILITY else None
curve_files = [path.with_name(f"{path.stem}_curves.csv") for path in LEARNABILITY]
budget_note = (
    paper_budget_markdown(
        budget_outcomes(learnability, pd.concat(map(pd.read_csv, curve_files)), paper_steps), paper_steps
    )
    if LEARNABILITY and all(path.exists() for path in curve_files)
    else ""
)
common = {
    "sweeps": sweeps,
    "learnability": learnability,
    "paper_steps": paper_steps,
    "configured": configured,
    "blocks": {arch: sweep_blocks(config, arch) for arch, _ in pairs},
    "config_name": "config/config.yaml",
}

runs = []  # (log name, jobs, elapsed), oldest first: log names start with their start time
for log in sorted(Path(".snakemake/log").glob("*.snakemake.log")):
    found = complete_run(log.read_text(errors="ignore"))
    if found:
        runs.append((log.name, *found))
results_md.parent.mkdir(parents=True, exist_ok=True)
if not runs or not Path("results/claims.csv").exists():
    text = replace_section(readme.read_text(), readme_block(None, budget_note=budget_note))  # checks markers
    results_md.write_text(results_document(None, **common))
    readme.write_text(text)
    print("no complete run with results/claims.csv here: README says so, docs/results.md has the benchmarks")
    sys.exit(0)
base = max(range(len(runs)), key=lambda i: (runs[i][1], i))
started = datetime.strptime(runs[base][0][:17], "%Y-%m-%dT%H%M%S")
date = started.strftime("%Y-%m-%d")
run_time = "; then ".join(f"{jobs} jobs, Snakemake wall time {elapsed}" for _, jobs, elapsed in runs[base:])
claims = pd.read_csv("results/claims.csv")
extension = pd.read_csv(EXTENSION) if EXTENSION.exists() else None
text = replace_section(readme.read_text(), readme_block(claims, run_time, budget_note, extension))  # checks markers
conv1d_measured = "measured" in claims and claims.set_index("finding")["measured"].notna().get(7, False)
(readme.parent / shown).parent.mkdir(parents=True, exist_ok=True)
shutil.copyfile(FIGURE, readme.parent / shown)
results_md.write_text(
    results_document(
        claims,
        pd.read_csv("results/tables/behaviour_summary.csv"),
        pd.read_csv("results/tables/training.csv"),
        date=date,
        run_time=run_time,
        conv1d_summary=pd.read_csv("results/tables/conv1d_summary.csv") if conv1d_measured else None,
        probe_figure=shown.name,  # relative to docs/results.md
        robustness=pd.read_csv(ROBUSTNESS) if ROBUSTNESS.exists() else None,
        behaviour=pd.read_csv("results/tables/behaviour.csv") if Path("results/tables/behaviour.csv").exists() else None,
        train_length=config["train_length"],
        learned_accuracy=config["claims"]["learned_accuracy"],
        subclaims=pd.read_csv("results/subclaims.csv") if Path("results/subclaims.csv").exists() else None,
        **common,
    )
)
readme.write_text(text)
print(f"README verdicts and docs/results.md from the run started {started} ({run_time})")
