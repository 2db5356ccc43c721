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
- every table in results/tables equals the one a local run of the same config writes
  (wall-clock columns aside).

A second run goes through the GPU profile, layered on profiles/slurm with the site's
partition and account as its only options (``--profile profiles/slurm
--workflow-profile profiles/slurm-gpu --default-resources slurm_partition=gpu
slurm_account=...``), on the same cluster, whose node has fake GPUs (tools/slurm/start.sh):

- every model job asked for one GPU (--gpus=1, --cpus-per-gpu) in that partition and
  account, and Slurm allocated it one (``scontrol show job -d``: JOB_GRES=gpu:1, and a
  device index while it ran); no other job got a GPU; its tables equal the local run's.

A third, short run (training only) goes through profiles/slurm-gpu/shard.yaml: every
model job asked for and got one ``shard`` of a GPU, and two ran on one GPU at once.
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
from workflow_run import REPO, SNAKEMAKE, copy_workflow, planned_jobs, snakemake

needs_slurm = pytest.mark.skipif(
    os.environ.get("STATELAYERS_SLURM") != "1",
    reason="real Slurm cluster: set STATELAYERS_SLURM=1 (make test-slurm)",
)

TOOLS = REPO / "tools" / "slurm"
RUN_TIMEOUT = 1800  # seconds for the whole Slurm run
CANCEL_RULE = "train"


def rule_texts(root: Path = REPO) -> list[str]:
    return [(root / "Snakefile").read_text()] + [
        smk.read_text() for smk in sorted((root / "workflow" / "rules").glob("*.smk"))
    ]


def all_rules(root: Path = REPO) -> set[str]:
    """Every rule of the workflow: ``rule X:`` and ``use rule Y as X``."""
    names = set()
    for text in rule_texts(root):
        names |= set(re.findall(r"^rule (\w+):", text, re.MULTILINE))
        names |= set(re.findall(r"^use rule \w+ as (\w+)", text, re.MULTILINE))
    return names


def gpu_rules(root: Path = REPO) -> set[str]:
    """The model rules: those with a ``gpu`` resource (and rules derived from them)."""
    found, texts = set(), rule_texts(root)
    for text in texts:
        for rule, body in re.findall(r"^rule (\w+):\n((?:[ \t]+.*\n|\n)*)", text, re.MULTILINE):
            if re.search(r"^\s+gpu=", body, re.MULTILINE):
                found.add(rule)
    for text in texts:  # `use rule X as Y with:` keeps X's resources
        found |= {
            child
            for parent, child in re.findall(r"^use rule (\w+) as (\w+)", text, re.MULTILINE)
            if parent in found
        }
    return found


def test_profile_requests_gpus_only_where_rules_use_them():
    """Every rule with a ``gpu`` resource has a set-resources entry pinning gpu 0 (the GPU
    layer, profiles/slurm-gpu, gives it one); no global gpu limit; the Slurm executor; squeue status."""
    profile = yaml.safe_load((REPO / "profiles" / "slurm" / "config.yaml").read_text())
    gpu_rules_ = gpu_rules()
    assert {"train", "evaluate", "erasures"} <= gpu_rules_
    with_gpu = {rule for rule, res in profile["set-resources"].items() if "gpu" in res}
    assert with_gpu == gpu_rules_
    assert all(profile["set-resources"][rule]["gpu"] == 0 for rule in gpu_rules_)
    assert not any("cpus_per_gpu" in profile["set-resources"][rule] for rule in gpu_rules_)  # the GPU layer's
    assert "resources" not in profile and "gpu" not in str(profile["default-resources"])
    assert profile["executor"] == "slurm" and profile["slurm-status-command"] == "squeue"


GPU_PROFILES = REPO / "profiles" / "slurm-gpu"
# The one command for a GPU cluster (docs/slurm.md): the site's partition and account
# are its only options. The test cluster has a partition `gpu`; without slurmdbd any
# account is accepted and recorded.
GPU_RUN = [
    "--profile", "profiles/slurm",
    "--workflow-profile", "profiles/slurm-gpu",
    "--default-resources", "slurm_partition=gpu", "slurm_account=statelayers",
]  # fmt: skip
SHARD_RUN = [
    "--profile", "profiles/slurm",
    "--workflow-profile", "profiles/slurm-gpu/shard.yaml",
    "--default-resources", "slurm_partition=gpu", "slurm_account=statelayers",
]  # fmt: skip


def test_gpu_profile_gives_every_model_rule_one_gpu():
    """profiles/slurm-gpu: one GPU (or, in shard.yaml, one shard) for exactly the model
    rules; every rule that is submitted has its own runtime and mem_mb, so that the
    command line's --default-resources (partition, account) replaces nothing needed;
    the executor settings are left to profiles/slurm, under which it is layered."""
    remote = all_rules() - declared_localrules(REPO) - {"all"}
    model = gpu_rules()
    assert model <= remote and {"probes", "task_data"} <= remote - model
    whole = yaml.safe_load((GPU_PROFILES / "config.yaml").read_text())
    shard = yaml.safe_load((GPU_PROFILES / "shard.yaml").read_text())
    for profile in (whole, shard):
        assert set(profile) == {"default-resources", "set-resources"}
        assert set(profile["set-resources"]) == remote
        for rule, res in profile["set-resources"].items():
            assert {"runtime", "mem_mb"} <= set(res), rule
        assert not {"slurm_partition", "slurm_account"} & set(profile["default-resources"])
    for rule in remote:
        assert whole["set-resources"][rule].get("gpu", 0) == (1 if rule in model else 0)
        assert shard["set-resources"][rule].get("gpu", 0) == 0
        assert shard["set-resources"][rule].get("gres") == ("shard:1" if rule in model else None)
        assert ("cpus_per_gpu" in whole["set-resources"][rule]) == (rule in model)
        for key in ("runtime", "mem_mb"):
            assert shard["set-resources"][rule][key] == whole["set-resources"][rule][key]
    base = yaml.safe_load((REPO / "profiles" / "slurm" / "config.yaml").read_text())
    assert base["executor"] == "slurm"


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


def slurm_output(command: list[str], env: dict) -> str:
    """What a Slurm client command prints (it must succeed within a minute)."""
    return subprocess.run(command, env=env, capture_output=True, text=True, check=True, timeout=60).stdout


def slurm_records(env: dict) -> dict[str, tuple[str, str, str]]:
    """Slurm job id -> (state, job name, comment) of every job slurmctld still holds."""
    out = slurm_output(["squeue", "--states=all", "--noheader", "--format=%i|%T|%j|%k"], env)
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


def assert_same_tables(root: Path, local_root: Path) -> None:
    """Every table in results/tables equal to the local run's, but for wall-clock
    columns (``*seconds*``, e.g. training.csv's train_seconds)."""
    on_slurm = sorted(p.name for p in (root / "results" / "tables").glob("*.csv"))
    local = sorted(p.name for p in (local_root / "results" / "tables").glob("*.csv"))
    assert on_slurm == local and len(local) >= 6

    def read(path: Path) -> pd.DataFrame:
        table = pd.read_csv(path)
        return table.drop(columns=[c for c in table.columns if "seconds" in c])

    for name in local:
        pd.testing.assert_frame_equal(
            read(root / "results" / "tables" / name),
            read(local_root / "results" / "tables" / name),
            check_exact=False,
            rtol=1e-6,
            atol=1e-9,
            obj=name,
        )


@pytest.mark.slurm
@needs_slurm
def test_tables_equal_those_of_a_local_run(slurm_run, local_run):
    assert_same_tables(slurm_run[0], local_run)


# The GPU profile (issue 38) on the test cluster's fake GPUs: Slurm schedules and
# allocates them like real ones; the jobs themselves run on CPU (test.yaml: device cpu).


def scontrol_jobs(env: dict) -> dict[str, dict[str, str]]:
    """Slurm job id -> the fields of ``scontrol show job -d`` for every job slurmctld
    still holds: JobState, Partition, Account, TresPerJob (--gpus), TresPerNode (--gres),
    CpusPerTres (--cpus-per-gpu), JOB_GRES (what Slurm allocated; kept after the job
    ends) and, while it runs, GRES with the device index (e.g. gpu:1(IDX:0))."""
    out = slurm_output(["scontrol", "show", "job", "-d", "--oneliner"], env)
    jobs = {}
    for line in out.splitlines():
        fields = dict(re.findall(r"(\S+?)=(\S*)", line))
        if "JobId" in fields:
            jobs[fields["JobId"]] = fields
    return jobs


def run_polled(root: Path, env: dict, args: list[str], log_name: str):
    """Run Snakemake with ``args`` while polling scontrol. Returns (exit code,
    Snakemake's output, the last record of every Slurm job seen, and one snapshot per
    poll: Slurm id -> GRES of the jobs RUNNING then)."""
    log_path = root / log_name
    last: dict[str, dict[str, str]] = {}
    running: list[dict[str, str]] = []
    with open(log_path, "w") as log:
        proc = subprocess.Popen(
            [*SNAKEMAKE, *args], cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT, text=True
        )
        deadline = time.monotonic() + RUN_TIMEOUT
        try:
            while proc.poll() is None:
                if time.monotonic() > deadline:
                    proc.terminate()
                    proc.wait(timeout=120)
                    pytest.fail(f"Slurm run exceeded {RUN_TIMEOUT}s:\n{log_path.read_text()[-5000:]}")
                try:
                    jobs = scontrol_jobs(env)
                except (subprocess.CalledProcessError, subprocess.TimeoutExpired):
                    continue
                finally:
                    time.sleep(0.5)
                last |= jobs
                running.append(
                    {i: job.get("GRES", "") for i, job in jobs.items() if job.get("JobState") == "RUNNING"}
                )
        finally:
            if proc.poll() is None:
                proc.kill()
    last |= scontrol_jobs(env)
    return proc.returncode, log_path.read_text(), last, running


@pytest.fixture(scope="module")
def gpu_run(cluster, tmp_path_factory):
    root = copy_workflow(tmp_path_factory.mktemp("slurm_gpu_workflow"))
    started = time.monotonic()
    code, text, jobs, running = run_polled(
        root, cluster, [*GPU_RUN, "--configfile", "config/test.yaml"], "snakemake_slurm_gpu.log"
    )
    print(f"\nGPU profile run: {time.monotonic() - started:.0f} s, exit {code}, {len(jobs)} Slurm jobs")
    assert code == 0, f"snakemake on Slurm (GPU profile) failed ({code}):\n{text[-8000:]}"
    return root, text, jobs, running


@pytest.mark.slurm
@needs_slurm
def test_gpu_profile_every_model_job_was_granted_a_gpu(gpu_run):
    """The one GPU-cluster command: every model job asked Slurm for one GPU and
    cpus_per_gpu CPUs, in the partition and account given on the command line, and
    Slurm allocated it one GPU (JOB_GRES=gpu:1; a device index while it ran); every
    other submitted job got no GPU; the aggregate rules ran locally."""
    root, text, jobs, running = gpu_run
    rules, submitted, local = parse_log(text)
    remote = set(rules) - local
    here = declared_localrules(root) | {"all"}
    assert local and {rules[j] for j in local} <= here
    assert not {rules[j] for j in remote} & here
    assert set(submitted) == remote
    model = {j for j in remote if rules[j] in gpu_rules(root)}
    # train, evaluate, untrained, erasures; probes (trained and untrained), task data
    assert len(model) >= 15 * 4 and len(remote - model) >= 15 * 2
    for j in remote:
        for slurm_id in submitted[j]:
            job, where = jobs[slurm_id], f"{rules[j]} (Slurm job {slurm_id})"
            assert job["JobState"] == "COMPLETED", where
            assert (job["Partition"], job["Account"]) == ("gpu", "statelayers"), where
            if j in model:
                assert job.get("TresPerJob") == "gres:gpu:1", where  # sbatch --gpus=1
                assert job.get("CpusPerTres") == "gres:gpu:1", where  # --cpus-per-gpu=1 (threads)
                assert job.get("JOB_GRES") == "gpu:1", where  # allocated by Slurm
            else:
                assert job.get("JOB_GRES") == "(null)" and "TresPerJob" not in job, where
    model_ids = {i for j in model for i in submitted[j]}
    other_ids = {i for j in remote - model for i in submitted[j]}
    seen = {i: gres for snapshot in running for i, gres in snapshot.items()}
    assert model_ids & set(seen), "no model job was seen running"
    for i in model_ids & set(seen):
        assert re.fullmatch(r"gpu:1\(IDX:\d+\)", seen[i]), (i, seen[i])
    for i in other_ids & set(seen):
        assert seen[i] == "", (i, seen[i])
    # Each running job held its own GPU: no device index twice at one moment.
    for snapshot in running:
        held = [gres for i, gres in snapshot.items() if i in model_ids]
        assert len(held) == len(set(held)), snapshot
    assert "steps (100%) done" in text


@pytest.mark.slurm
@needs_slurm
def test_gpu_profile_tables_equal_those_of_a_local_run(gpu_run, local_run):
    assert_same_tables(gpu_run[0], local_run)


@pytest.fixture(scope="module")
def shard_run(cluster, tmp_path_factory):
    """Training only (two tasks, every architecture) through profiles/slurm-gpu/shard.yaml."""
    root = copy_workflow(tmp_path_factory.mktemp("slurm_shard_workflow"))
    config = yaml.safe_load((root / "config" / "test.yaml").read_text())
    targets = [
        f"results/models/{arch}/{task}/seed{config['seeds'][0]}/model.pt"
        for arch in config["architectures"]
        for task in config["tasks"][:2]
    ]
    started = time.monotonic()
    code, text, jobs, running = run_polled(
        root,
        cluster,
        [*SHARD_RUN, "--configfile", "config/test.yaml", "--", *targets],
        "snakemake_slurm_shard.log",
    )
    print(f"\nShard profile run: {time.monotonic() - started:.0f} s, exit {code}, {len(jobs)} Slurm jobs")
    assert code == 0, f"snakemake on Slurm (shard profile) failed ({code}):\n{text[-8000:]}"
    return root, text, jobs, running, len(targets)


@pytest.mark.slurm
@needs_slurm
def test_shard_profile_model_jobs_share_a_gpu(shard_run):
    """With shard.yaml every model job asks for one shard (sbatch --gres=shard:1) and
    Slurm allocates one; two of them ran at the same time on the same GPU."""
    root, text, jobs, running, n_targets = shard_run
    rules, submitted, local = parse_log(text)
    remote = set(rules) - local
    model = {j for j in remote if rules[j] in gpu_rules(root)}
    assert {rules[j] for j in model} == {"train"} and len(model) == n_targets
    model_ids = {i for j in model for i in submitted[j]}
    for i in model_ids:
        job = jobs[i]
        assert job["JobState"] == "COMPLETED", i
        assert job.get("TresPerNode") == "gres:shard:1" and "TresPerJob" not in job, i
        assert job.get("JOB_GRES") == "shard:1", i
    devices_at_once = []
    for snapshot in running:
        found = [re.fullmatch(r"shard:1\(IDX:(\d+)\)", g) for i, g in snapshot.items() if i in model_ids]
        assert all(found), snapshot
        devices_at_once.append(Counter(m.group(1) for m in found))
    assert (
        max((max(c.values(), default=0) for c in devices_at_once), default=0) >= 2
    ), "no two model jobs were seen running on one GPU at once"
    assert "steps (100%) done" in text
