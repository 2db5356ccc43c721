"""The workflow through profiles/slurm on a real single-node Slurm cluster (issue 8).

The cluster tests are skipped unless STATELAYERS_SLURM=1 (``make test-slurm``): they
need root, install Debian's Slurm packages if missing (tools/slurm/start.sh) and take
several minutes. The first test only reads the profile and runs in every suite.

One run of config/test.yaml goes through ``snakemake --workflow-profile profiles/slurm``
while the test cancels one running ``train`` job with ``scancel``; then:

- every job that is not a ``localrules`` entry was submitted with ``sbatch`` (its Slurm
  job id is in Snakemake's log) and Slurm itself recorded each of those ids, and no
  others, under the run's job name, all COMPLETED except the cancelled one;
- the cancelled job failed in Slurm (CANCELLED), Snakemake resubmitted it (the
  config ``retries``) under a new Slurm id that completed, and the run succeeded;
- every table in results/tables equals the one a local run of the same config writes.
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

import pandas as pd
import pytest
import yaml
from test_workflow import REPO, SNAKEMAKE, copy_workflow, planned_jobs, snakemake

needs_slurm = pytest.mark.skipif(
    os.environ.get("STATELAYERS_SLURM") != "1",
    reason="real Slurm cluster: set STATELAYERS_SLURM=1 (make test-slurm)",
)

TOOLS = REPO / "tools" / "slurm"
RUN_TIMEOUT = 1800  # seconds for the whole Slurm run
CANCEL_RULE = "train"


def test_profile_requests_gpus_only_where_rules_use_them():
    """Every rule with a ``gpu`` resource has a set-resources entry (gpu 0 until a GPU
    cluster switches it on); no global gpu limit; the Slurm executor; squeue status."""
    profile = yaml.safe_load((REPO / "profiles" / "slurm" / "config.yaml").read_text())
    gpu_rules, texts = set(), [smk.read_text() for smk in (REPO / "workflow" / "rules").glob("*.smk")]
    for text in texts:
        for rule, body in re.findall(r"^rule (\w+):\n((?:[ \t]+.*\n|\n)*)", text, re.MULTILINE):
            if re.search(r"^\s+gpu=", body, re.MULTILINE):
                gpu_rules.add(rule)
    for text in texts:  # `use rule X as Y with:` keeps X's resources
        gpu_rules |= {
            child
            for parent, child in re.findall(r"^use rule (\w+) as (\w+)", text, re.MULTILINE)
            if parent in gpu_rules
        }
    assert {"train", "evaluate", "interventions"} <= gpu_rules
    with_gpu = {rule for rule, res in profile["set-resources"].items() if "gpu" in res}
    assert with_gpu == gpu_rules
    assert all(profile["set-resources"][rule]["gpu"] == 0 for rule in gpu_rules)
    assert all(profile["set-resources"][rule]["cpus_per_gpu"] >= 1 for rule in gpu_rules)
    assert "resources" not in profile and "gpu" not in str(profile["default-resources"])
    assert profile["executor"] == "slurm" and profile["slurm-status-command"] == "squeue"


@pytest.fixture(scope="module")
def cluster():
    """A fresh cluster: own directory, munge socket and ports; stopped afterwards.

    The directory is not under pytest's tmp_path: munged refuses a socket below a
    directory that others cannot traverse (pytest's are mode 0700). start.sh refuses
    while another cluster it started is running (tools/slurm/stop.sh stops that one).
    """
    slurm_dir = Path(tempfile.mkdtemp(prefix="statelayers-slurm-test-", dir="/tmp"))
    env = os.environ | {
        "SLURM_DIR": str(slurm_dir),
        "SLURMCTLD_PORT": os.environ.get("STATELAYERS_SLURMCTLD_PORT", "6917"),
        "SLURMD_PORT": os.environ.get("STATELAYERS_SLURMD_PORT", "6918"),
    }
    env = {k: v for k, v in env.items() if not k.startswith(("SLURM_JOB", "SLURM_CONF"))}
    try:
        started = subprocess.run(
            ["bash", str(TOOLS / "start.sh")],
            check=False,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert started.returncode == 0, f"start.sh failed:\n{started.stdout}\n{started.stderr}"
        env["SLURM_CONF"] = str(slurm_dir / "slurm.conf")
        yield env
    finally:
        subprocess.run(
            ["bash", str(TOOLS / "stop.sh")],
            check=False,
            env=env | {"SLURM_DIR_REMOVE": "1"},
            capture_output=True,
            timeout=120,
        )


def slurm_records(env: dict) -> dict[str, tuple[str, str, str]]:
    """Slurm job id -> (state, job name, comment) of every job slurmctld still holds."""
    out = subprocess.run(
        ["squeue", "--states=all", "--noheader", "--format=%i|%T|%j|%k"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    return {
        i: (state, name, comment)
        for i, state, name, comment in (line.split("|", 3) for line in out.splitlines() if line)
    }


def run_on_slurm(root: Path, env: dict) -> tuple[int, str, dict, str]:
    """Run the workflow through the profile; scancel one running CANCEL_RULE job.

    Returns (exit code, Snakemake's output, every Slurm record seen while it ran, the
    cancelled Slurm job id). Slurm forgets finished jobs MinJobAge after they end, so
    the records are collected by polling squeue during the run. A job that finishes
    between the poll and scancel ends COMPLETED, not CANCELLED; then another is tried.
    """
    log_path = root / "snakemake_slurm.log"
    seen: dict[str, tuple[str, str, str]] = {}
    tried: list[str] = []
    cancelled = ""
    configs = ["config/test.yaml"]
    if "retries" in yaml.safe_load((root / "config" / "test.yaml").read_text()):
        # The study's rules take their retries from the config (0 in test.yaml, so that
        # local test failures surface at once); the cancelled job needs one.
        (root / "retry.yaml").write_text(yaml.safe_dump({"retries": 2}))
        configs.append("retry.yaml")
    with open(log_path, "w") as log:
        proc = subprocess.Popen(
            [*SNAKEMAKE, "--workflow-profile", "profiles/slurm", "--configfile", *configs],
            cwd=root,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            text=True,
        )
        deadline = time.monotonic() + RUN_TIMEOUT
        try:
            while proc.poll() is None:
                if time.monotonic() > deadline:
                    proc.terminate()  # Snakemake scancels its jobs on SIGTERM
                    proc.wait(timeout=120)
                    pytest.fail(f"Slurm run exceeded {RUN_TIMEOUT}s:\n{log_path.read_text()[-5000:]}")
                try:
                    records = slurm_records(env)
                except (subprocess.CalledProcessError, subprocess.TimeoutExpired):
                    continue  # a busy slurmctld: ask again
                finally:
                    time.sleep(0.5)
                seen |= records
                if cancelled:
                    continue
                states = {i: records.get(i, ("",))[0] for i in tried}
                cancelled = next((i for i, state in states.items() if state == "CANCELLED"), "")
                if cancelled or any(state in ("RUNNING", "COMPLETING", "") for state in states.values()):
                    continue
                running = [
                    i
                    for i, (state, _, comment) in records.items()
                    if state == "RUNNING" and comment.startswith(f"rule_{CANCEL_RULE}_")
                ]
                if running:
                    tried.append(running[0])
                    subprocess.run(
                        ["scancel", running[0]], check=False, env=env, capture_output=True, timeout=60
                    )
        finally:
            if proc.poll() is None:
                proc.kill()
    seen |= slurm_records(env)
    if not cancelled:
        cancelled = next((i for i in tried if seen[i][0] == "CANCELLED"), "")
    return proc.returncode, log_path.read_text(), seen, cancelled


def declared_localrules(root: Path) -> set[str]:
    """Rule names in the workflow's ``localrules:`` directives."""
    names = set()
    for smk in [root / "Snakefile", *sorted((root / "workflow" / "rules").glob("*.smk"))]:
        for same_line, indented in re.findall(
            r"^localrules:[ \t]*([^\n]*)\n((?:[ \t]+[^\n]*\n)*)", smk.read_text(), re.MULTILINE
        ):
            names |= set(re.findall(r"\w+", same_line + indented))
    return names


def parse_log(text: str):
    """(rule of every scheduled job, Slurm ids per Snakemake job id, local job ids).

    Failed jobs' logs (show-failed-logs), framed by lines of "=", are left out: a Slurm
    job's log holds the output of the Snakemake runs inside the job, with their own
    job blocks (jobid 0).
    """
    text = re.sub(r"^Logfile [^\n]*:\n={20,}\n.*?^={20,}$", "", text, flags=re.MULTILINE | re.DOTALL)
    rules, local = {}, set()
    for block in re.split(r"\n\s*\n", text):
        found = re.search(r"^(local)?rule (\w+):\n(?:.*\n)*?\s+jobid: (\d+)$", block, re.MULTILINE)
        if found:
            rules[int(found.group(3))] = found.group(2)
            if found.group(1):
                local.add(int(found.group(3)))
    submitted = defaultdict(list)
    for jobid, slurm_id in re.findall(r"Job (\d+) has been submitted with SLURM jobid (\d+)", text):
        submitted[int(jobid)].append(slurm_id)
    return rules, dict(submitted), local


@pytest.fixture(scope="module")
def slurm_run(cluster, tmp_path_factory):
    root = copy_workflow(tmp_path_factory.mktemp("slurm_workflow"))
    (root / "planned.txt").write_text("".join(f"{rule}\n" for rule, _ in planned_jobs(root)))
    started = time.monotonic()
    code, text, seen, cancelled = run_on_slurm(root, cluster)
    _, submitted, local = parse_log(text)
    ids = sorted(int(i) for jobs in submitted.values() for i in jobs)
    print(
        f"\nSlurm run: {time.monotonic() - started:.0f} s, exit {code}; {len(submitted)} jobs "
        f"submitted as {len(ids)} Slurm jobs (ids {ids[0] if ids else '-'}..{ids[-1] if ids else '-'}), "
        f"{len(local)} local; cancelled Slurm job {cancelled or 'none'}, resubmitted as "
        f"{[j for jobs in submitted.values() if cancelled in jobs for j in jobs if j != cancelled]}"
    )
    assert code == 0, f"snakemake on Slurm failed ({code}):\n{text[-8000:]}"
    return root, text, seen, cancelled


@pytest.fixture(scope="module")
def local_run(tmp_path_factory):
    root = copy_workflow(tmp_path_factory.mktemp("local_workflow"))
    snakemake(root, "--configfile", "config/test.yaml")
    return root


@pytest.mark.slurm
@needs_slurm
def test_every_non_local_job_went_through_sbatch(slurm_run):
    root, text, seen, cancelled = slurm_run
    rules, submitted, local = parse_log(text)
    # What a dry run plans: the workflow's localrules and `all` run here, the rest on Slurm.
    planned = Counter((root / "planned.txt").read_text().split())
    here = declared_localrules(root) | {"all"}
    assert Counter(rules[j] for j in local) == Counter({r: n for r, n in planned.items() if r in here})
    remote = set(rules) - local
    assert Counter(rules[j] for j in remote) == Counter({r: n for r, n in planned.items() if r not in here})
    assert len(remote) >= 15 * 6  # data files + 5 archs x 3 tasks x per-run rules
    assert set(submitted) == remote  # every remote job has a Slurm id, no local job has one

    # Slurm's own records: exactly these ids under this run's job name.
    run_id = re.search(r"SLURM run ID: (\S+)", text).group(1)
    ours = {i: state for i, (state, name, _) in seen.items() if name == run_id}
    logged = {i for ids in submitted.values() for i in ids}
    assert set(ours) == logged
    assert {i for i, state in ours.items() if state != "COMPLETED"} == {cancelled}


@pytest.mark.slurm
@needs_slurm
def test_a_cancelled_job_is_retried_and_the_run_completes(slurm_run):
    root, text, seen, cancelled = slurm_run
    assert cancelled, f"no running {CANCEL_RULE} job was seen to cancel"
    assert seen[cancelled][0] == "CANCELLED"
    rules, submitted, _ = parse_log(text)
    [jobid] = [j for j, ids in submitted.items() if cancelled in ids]
    assert rules[jobid] == CANCEL_RULE
    assert f"SLURM-job '{cancelled}' failed" in text
    assert f"Trying to restart job {jobid}" in text
    retry = submitted[jobid][submitted[jobid].index(cancelled) + 1]
    assert seen[retry][0] == "COMPLETED"
    assert (root / "results" / "tables" / "probes.csv").exists()
    assert "steps (100%) done" in text


@pytest.mark.slurm
@needs_slurm
def test_tables_equal_those_of_a_local_run(slurm_run, local_run):
    root = slurm_run[0]
    on_slurm = sorted(p.name for p in (root / "results" / "tables").glob("*.csv"))
    local = sorted(p.name for p in (local_run / "results" / "tables").glob("*.csv"))
    assert on_slurm == local and len(local) >= 6
    for name in local:
        pd.testing.assert_frame_equal(
            pd.read_csv(root / "results" / "tables" / name),
            pd.read_csv(local_run / "results" / "tables" / name),
            check_exact=False,
            rtol=1e-6,
            atol=1e-9,
            obj=name,
        )
