# `snakemake --cores all learnability`: the budget each pair needs (statelayers.learnability).
# Seed learnability.seed of every pair in learnability.pairs: its default run where that
# reached the criterion (the default run is trained first if missing), else a run with the
# pair's settings to learnability.max_steps. Not part of the default target; writes
# benchmarks/<learnability.name>* (committed).

LEARNABILITY_SEED = config["learnability"]["seed"]
LEARNABILITY_NAME = config["learnability"]["name"]
LEARNABILITY_RUN = f"results/learnability/{LEARNABILITY_NAME}/{{arch}}/{{task}}"
DEFAULT_RUN = f"results/models/{{arch}}/{{task}}/seed{LEARNABILITY_SEED}"
LEARNABILITY = {
    "table": f"benchmarks/{LEARNABILITY_NAME}.csv",
    "curves": f"benchmarks/{LEARNABILITY_NAME}_curves.csv",
    "figure": f"benchmarks/{LEARNABILITY_NAME}",
}


localrules:
    learnability,
    learnability_table,
    learnability_figure,


rule learnability:
    input:
        LEARNABILITY["table"],
        LEARNABILITY["curves"],
        f"{LEARNABILITY['figure']}.png",


rule learnability_train:
    input:
        unpack(corpus_input),
        validation=data_file("validation", TRAIN_LENGTH),
        default_meta=f"{DEFAULT_RUN}/model.json",
        default_history=f"{DEFAULT_RUN}/train_log.csv",
    output:
        summary=f"{LEARNABILITY_RUN}.csv",
        curve=f"{LEARNABILITY_RUN}_curve.csv",
    log:
        f"results/logs/learnability/{LEARNABILITY_NAME}/{{arch}}/{{task}}.log",
    benchmark:
        f"results/benchmarks/learnability/{LEARNABILITY_NAME}/{{arch}}/{{task}}.tsv"
    priority: train_priority
    conda:
        CONDA_ENV
    threads: rules.train.rule.resources["_cores"]
    resources:
        gpu=model_gpu,
    params:
        run=run_params(
            model_spec_of_job, learnability_settings_of_job, seed=LEARNABILITY_SEED
        ),
        pair=lambda wc: {"arch": wc.arch, "task": wc.task},
    script:
        "../scripts/learnability_train.py"


rule learnability_table:
    input:
        summaries=learnability_inputs(f"{LEARNABILITY_RUN}.csv"),
        curves=learnability_inputs(f"{LEARNABILITY_RUN}_curve.csv"),
        default_histories=learnability_inputs(f"{DEFAULT_RUN}/train_log.csv"),
    output:
        table=LEARNABILITY["table"],
        curves=LEARNABILITY["curves"],
    log:
        f"results/logs/tables/{LEARNABILITY_NAME}.log",
    benchmark:
        f"results/benchmarks/tables/{LEARNABILITY_NAME}.tsv"
    conda:
        CONDA_ENV
    params:
        default_training=learnability_default_training(),
    script:
        "../scripts/learnability_table.py"


rule learnability_figure:
    input:
        table=LEARNABILITY["table"],
        curves=LEARNABILITY["curves"],
    output:
        png=f"{LEARNABILITY['figure']}.png",
        pdf=f"{LEARNABILITY['figure']}.pdf",
    log:
        f"results/logs/figures/{LEARNABILITY_NAME}.log",
    benchmark:
        f"results/benchmarks/figures/{LEARNABILITY_NAME}.tsv"
    conda:
        CONDA_ENV
    params:
        criterion=config["training"]["target_accuracy"],
    script:
        "../scripts/learnability_figure.py"
