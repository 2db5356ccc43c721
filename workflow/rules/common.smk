import re
import shutil
from pathlib import Path

import pandas as pd

from snakemake.utils import validate

from statelayers import settings, sweep
from statelayers.models.registry import NO_CONV, SSM, TRAINING_TIME_ORDER, base_arch

##### Constants: the validated config and the study's dimensions #####

validate(config, schema="../schemas/config.schema.yaml")
settings.check_config(config)

ARCHS = config["architectures"]
TASKS = config["tasks"]
SEEDS = config["seeds"]
TRAIN_LENGTH = config["train_length"]
EVAL_LENGTHS = sorted(config["eval_lengths"])
CONDA_ENV = "../../envs/study.yaml"

PRETRAINED_CONFIG = config["pretrained"]
# Fine-tuned pretrained backbones are runs like the small architectures', keyed by name.
PRETRAINED_SOURCES = {
    model["name"]: model["source"] for model in PRETRAINED_CONFIG["models"]
}
PRETRAINED = list(PRETRAINED_SOURCES) if PRETRAINED_CONFIG["enabled"] else []
PRETRAINED_SEEDS = PRETRAINED_CONFIG["seeds"]
PATCHING_TASKS = (
    [task for task in TASKS if task != "codedepth"]
    if config["patching"]["enabled"]
    else []
)
# Families whose Conv1D attribution runs: both the family and its variant are in the study.
CONV1D_FAMILIES = [
    base_arch(arch) for arch in ARCHS if arch in NO_CONV and base_arch(arch) in ARCHS
]


##### Paths: the wildcards and the file patterns the rules share #####


wildcard_constraints:
    arch="|".join(re.escape(arch) for arch in ARCHS + PRETRAINED),
    task="|".join(TASKS),
    seed=r"\d+",
    length=r"\d+",
    split="validation|probe|test",


RUN = "{arch}/{task}/seed{seed}"
MODEL_DIR = f"results/models/{RUN}"
STATES_DIR = f"results/states/{RUN}"
PROBE_STATES = f"{STATES_DIR}/probe_L{TRAIN_LENGTH}.parquet"
# Every run's untrained twin (its architecture at the run's initial weights) goes through
# evaluate and probes too, under this prefix: the probes' untrained baseline. Twins are
# read at the training length only, where the layer profiles are measured (the other
# lengths would add a third to their cost).
UNTRAINED_RUN = f"untrained/{RUN}"
UNTRAINED_MODEL_DIR = f"results/models/{UNTRAINED_RUN}"
UNTRAINED_STATES_DIR = f"results/states/{UNTRAINED_RUN}"
UNTRAINED_PROBE_STATES = f"{UNTRAINED_STATES_DIR}/probe_L{TRAIN_LENGTH}.parquet"
CODE_CORPUS = "results/data/codedepth/corpus.parquet"
SWEEP_RUN = "{arch}/{task}/{block}/start{start}_lr{lr}_batch{batch_size}/seed{seed}"

# Every aggregate table the rules share, named once: rules write and read them by key.
TABLES = {
    name: f"results/tables/{name}.csv"
    for name in (
        "behaviour",
        "probes",
        "erasures",
        "readability_vs_causality",
        "params",
        "training",
        "learning_curves",
        "behaviour_summary",
        "probe_summary",
        "profile_shapes",
        "codedepth_corpus",
        "conv1d",
        "conv1d_summary",
        "pretrained_behaviour",
        "pretrained_probes",
        "pretrained_erasures",
        "patching",
        "sweep",
    )
}


def data_file(split, length="{length}"):
    return f"results/data/{{task}}/{split}_L{length}.parquet"


def backbone_dir(name):
    return f"resources/models/{name}"


def test_state_files(states_dir=STATES_DIR, lengths=EVAL_LENGTHS):
    """The test-state files of a run, named ``L<length>`` like the test data."""
    return {f"L{length}": f"{states_dir}/test_L{length}.parquet" for length in lengths}


def model_output(path):
    """Model files, write-protected when ``training.protect_checkpoints`` is set."""
    return protected(path) if config["training"]["protect_checkpoints"] else path


# Every pretrained model can be had (fetched there, local, or on the hub when online).
settings.check_pretrained_sources(
    {name: PRETRAINED_SOURCES[name] for name in PRETRAINED}, backbone_dir
)


##### Input functions #####


def is_pretrained(wildcards):
    return wildcards.arch in PRETRAINED


def corpus_input(wildcards):
    """Code-Depth's data and training windows are cut from the corpus file; the formal
    tasks need no input (their generators draw them)."""
    return {"corpus": CODE_CORPUS} if wildcards.task == "codedepth" else {}


def test_data(lengths):
    """Input function: the job's task's test files at ``lengths``, named ``L<length>``."""

    def files(wildcards):
        return {
            f"L{length}": f"results/data/{wildcards.task}/test_L{length}.parquet"
            for length in sorted(lengths)
        }

    return files


def backbone_input(wildcards):
    """A pretrained run starts from its fetched backbone; the small ones from nothing."""
    return (
        {"backbone": backbone_dir(wildcards.arch)} if is_pretrained(wildcards) else {}
    )


def model_files(wildcards=None, model_dir=MODEL_DIR):
    """A trained run's files; a fine-tuned model is rebuilt from its backbone's config too."""
    files = {
        "weights": f"{model_dir}/model.pt",
        "meta": f"{model_dir}/model.json",
    }
    return files | (backbone_input(wildcards) if wildcards is not None else {})


##### Params functions (and the other per-job settings: priority, resources) #####


def task_params(task):
    """Generator parameters of one task; only they (not other tasks') reach its jobs."""
    return config["task_params"].get(task, {})


def model_spec_of_job(wildcards):
    """Everything that builds one architecture's model for one task: its family's options
    and its family's on that task only (statelayers.settings.model_spec)."""
    if is_pretrained(wildcards):
        return {
            "pretrained": backbone_dir(wildcards.arch),
            "task": wildcards.task,
            "task_params": task_params(wildcards.task),
        }
    return settings.model_spec(config, wildcards.arch, wildcards.task)


def train_settings_of_job(wildcards):
    """A run's training settings (statelayers.settings); a pretrained model's fine-tuning ones."""
    if is_pretrained(wildcards):
        return settings.pretrained_training(config)
    return settings.train_settings(config, wildcards.arch, wildcards.task)


def sweep_grid_point(wildcards):
    """The model dimensions of a sweep run's grid point, as its table columns."""
    return {"block": wildcards.block, "start_token": wildcards.start == "1"}


def sweep_spec_of_job(wildcards):
    """A sweep run's model: the study's, with its block's options and start token
    (statelayers.sweep.point_options)."""
    point = sweep_grid_point(wildcards)
    options = sweep.point_options(
        config, wildcards.arch, point["block"], point["start_token"]
    )
    return settings.model_spec(config, wildcards.arch, wildcards.task, options)


def sweep_training_of_job(wildcards):
    """A sweep run's training settings: the pair's own, with the grid point's learning
    rate and batch size, on the sweep's number of sequences (statelayers.sweep)."""
    arch, task = wildcards.arch, wildcards.task
    return sweep.point_training(
        config,
        arch,
        task,
        settings.train_settings(config, arch, task),
        float(wildcards.lr),
        int(wildcards.batch_size),
    )


def learnability_settings_of_job(wildcards):
    """A pair's own training settings to the learnability cap (statelayers.settings)."""
    return settings.learnability_settings(config, wildcards.arch, wildcards.task)


def mamba_settings(wildcards):
    """How Mamba and Mamba-2 run (the backend, and under it whose pure-PyTorch scan and
    convolution): their jobs only, so a change reruns no other small architecture.
    Pretrained models get both whatever their type (known only once fetched), so a
    change reruns Pythia's jobs too."""
    training = config["training"]
    if not is_pretrained(wildcards) and base_arch(wildcards.arch) not in SSM:
        return None
    return {"backend": training["mamba_backend"], "scan": training["mamba_scan"]}


def run_params(spec, training, seed=None):
    """The params function of a training job (train, sweep_train, learnability_train): its
    ``run`` param, statelayers.training.RunInputs but for the input files (the job script
    adds them). ``spec`` and ``training`` give the job's model and training settings;
    ``seed`` is the job's seed wildcard unless given. Every value is a param, so a config
    change reruns exactly the runs it changes."""

    def run(wildcards):
        return {
            "spec": spec(wildcards),
            "training": training(wildcards),
            "seed": int(wildcards.seed) if seed is None else seed,
            "data_seed": config["data_seed"],
            "train_length": TRAIN_LENGTH,
            "device": config["training"]["device"],
            "mamba": mamba_settings(wildcards),
        }

    return run


def erasure_settings_of_job(wildcards):
    return settings.erasure_settings(config, is_pretrained(wildcards))


def stored_test_sequences(wildcards):
    return (
        PRETRAINED_CONFIG["test_sequences"]
        if is_pretrained(wildcards)
        else config["states"]["test_sequences"]
    )


def claims_choices():
    """The analysis choices the verdicts are decided under: ``claims`` without its
    alternatives, with the intervals' confidence."""
    choices = {k: v for k, v in config["claims"].items() if k != "alternatives"}
    return choices | {"confidence": config["statistics"]["confidence"]}


def learnability_rows():
    """The rows of every committed learnability table (benchmarks/learnability*.csv): what
    a pair that did not learn needs, for the claims. Params, not input, so the claims rule
    never asks for a learnability measurement, and still reruns when a table changes."""
    tables = sorted(Path("benchmarks").glob("learnability*.csv"))
    frames = [pd.read_csv(path) for path in tables if not path.stem.endswith("_curves")]
    if not frames:
        return []
    table = pd.concat(frames, ignore_index=True)[
        ["arch", "task", "cap", "steps_to_95", "best_val_accuracy"]
    ]
    return table.astype(object).where(table.notna(), None).to_dict("records")


def train_priority(wildcards):
    """Pretrained fine-tuning first, then the families by training time, longest first
    (registry.TRAINING_TIME_ORDER). Snakemake starts the ready jobs of highest priority
    first; longest first keeps a long job from starting last and running alone while the
    other cores idle (a 260 s Mamba-2 job does, on 2 cores, when it starts last). A family
    not timed there starts last."""
    if is_pretrained(wildcards):
        return len(TRAINING_TIME_ORDER) + 1
    family = base_arch(wildcards.arch)
    return TRAINING_TIME_ORDER.index(family) + 1 if family in TRAINING_TIME_ORDER else 0


def gpu_jobs():
    """GPU tokens a model job takes: 1 when it will run on CUDA, else 0.

    ``auto`` counts as CUDA where ``nvidia-smi`` exists, without importing torch here
    (that would slow every snakemake start).
    """
    device = config["training"]["device"]
    return int(
        device == "cuda"
        or (device == "auto" and shutil.which("nvidia-smi") is not None)
    )


def model_gpu(wildcards):
    """GPU tokens of a model job: ``pretrained.gpu_tokens`` for a pretrained model's (its
    fine-tuning under `train`, and its evaluate, erasures and patching jobs), one for a
    small model's on CUDA. Fine-tuning Pythia-410M holds about 7 GB of GPU memory (fp32
    weights, gradients and AdamW state, bf16 activations) and keeps the GPU busy, where a
    small model's process holds about 0.5 GB, mostly its CUDA context, and waits on kernel
    launches (estimates; benchmarks/gpu_throughput.py measures the latter). Snakemake
    lowers a job's request to the --resources total, so with K at most the tokens a
    pretrained job has the GPU to itself. On a cluster the profiles set `gpu` per rule
    (one GPU each), so this never reaches sbatch."""
    return PRETRAINED_CONFIG["gpu_tokens"] if is_pretrained(wildcards) else gpu_jobs()


##### Targets: the files a stage gathers, and the default target #####


def per_run(pattern, tasks=TASKS):
    return expand(pattern, arch=ARCHS, task=tasks, seed=SEEDS)


def pretrained_runs(pattern, tasks=TASKS):
    return expand(pattern, arch=PRETRAINED, task=tasks, seed=PRETRAINED_SEEDS)


def sweep_runs():
    """Every sweep run's summary file: architectures x tasks x grid points x sweep seeds."""
    return [
        f"results/sweep/{point['arch']}/{point['task']}/{point['block']}/start{int(point['start_token'])}"
        f"_lr{point['lr']}_batch{point['batch_size']}/seed{point['seed']}.csv"
        for point in sweep.sweep_points(config)
    ]


def learnability_default_training():
    """Per pair the learnability measurement covers, in its order: the training settings
    its default run trains with (the pair's own, overrides and budget applied), which its
    study budget starts from (statelayers.report.learnability)."""
    return [
        {"arch": arch, "task": task}
        | {
            key: settings.train_settings(config, arch, task)[key]
            for key in ("max_steps", "eval_every", "target_accuracy")
        }
        for arch, task in settings.learnability_pairs(config)
    ]


def learnability_inputs(pattern):
    """``pattern`` for every pair the learnability measurement covers, in the study's order."""
    archs, tasks = zip(*settings.learnability_pairs(config))
    return expand(pattern, zip, arch=archs, task=tasks)


def final_outputs():
    """The default target: the outputs of the rules that end the study, as those rules
    name them (called by rule all, once every rule file is read)."""
    outputs = [
        rules.claims.output,
        rules.params_table.output,
        rules.training_tables.output,
        rules.probes_table.output,
        rules.summary_tables.output,
        rules.readability_table.output,
        expand(rules.aggregate_table.output[0], stage=["behaviour", "erasures"]),
        expand(
            rules.depth_table.output[0],
            task=[task for task in TASKS if task in ("dyck", "codedepth")],
        ),
        rules.learning_curves_figure.output,
        rules.probe_profiles_figure.output,
        rules.behaviour_figure.output,
        rules.erasure_figures.output,
    ]
    if "codedepth" in TASKS:
        outputs.append(rules.code_corpus.output.table)
    if CONV1D_FAMILIES:
        outputs += [rules.conv1d_tables.output, rules.conv1d_figure.output]
    if PRETRAINED:
        outputs += [
            expand(
                rules.pretrained_table.output[0],
                stage=["behaviour", "probes", "erasures"],
            ),
            rules.pretrained_figure.output,
        ]
    if PATCHING_TASKS:
        outputs += [rules.patching_table.output, rules.patching_figure.output]
    return outputs
