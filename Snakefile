# Layerwise state encoding in sequence models: the whole study as one DAG.
# Rules live in workflow/rules (one file per stage); the science in src/statelayers.
from snakemake.utils import min_version

min_version("9.0")


configfile: "config/config.yaml"


report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/train.smk"
include: "workflow/rules/evaluate.smk"
include: "workflow/rules/probes.smk"
include: "workflow/rules/erasures.smk"
include: "workflow/rules/conv1d.smk"
include: "workflow/rules/pretrained.smk"
include: "workflow/rules/patching.smk"
include: "workflow/rules/tables.smk"
include: "workflow/rules/figures.smk"
include: "workflow/rules/claims.smk"
include: "workflow/rules/sweep.smk"
include: "workflow/rules/learnability.smk"


onstart:
    # Stop before any job when CUDA is asked for on a machine without an NVIDIA GPU. Local
    # runs only: on a cluster the submitting host need not have one (jobs check again).
    if (
        workflow.executor_plugin is not None
        and workflow.executor_plugin.name == "local"
    ):
        settings.check_devices(
            config, PRETRAINED, has_gpu=shutil.which("nvidia-smi") is not None
        )


rule all:
    default_target: True
    input:
        final_outputs(),
