# `snakemake --cores all learnability`: the budget each pair needs (statelayers.learnability).
# Seed 0 of every pair: its default run where that reached the criterion (the default run
# is trained first if missing), else a run with the pair's settings to LEARNABILITY_CAP x
# training.max_steps. Not part of the default target; writes benchmarks/ (committed).

LEARNABILITY_SEED = 0
LEARNABILITY_RUN = "results/learnability/{arch}/{task}"
DEFAULT_RUN = f"results/models/{{arch}}/{{task}}/seed{LEARNABILITY_SEED}"
LEARNABILITY = {
    "table": "benchmarks/learnability.csv",
    "curves": "benchmarks/learnability_curves.csv",
}


localrules:
    learnability,
    learnability_table,
    learnability_figure,


rule learnability:
    input:
        LEARNABILITY["table"],
        LEARNABILITY["curves"],
        "benchmarks/learnability.png",


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
        "results/logs/learnability/{arch}/{task}.log",
    benchmark:
        "results/benchmarks/learnability/{arch}/{task}.tsv"
    priority: train_priority
    retries: config["retries"]
    conda:
        CONDA_ENV
    threads: config["training"]["threads"]
    resources:
        gpu=model_gpu,
    params:
        pair=lambda wc: {"arch": wc.arch, "task": wc.task},
        spec=model_spec,
        training=lambda wc: settings.learnability_settings(config, wc.arch, wc.task),
        seed=LEARNABILITY_SEED,
        data_seed=config["data_seed"],
        train_length=TRAIN_LENGTH,
        device=config["training"]["device"],
        mamba=mamba_settings,
    script:
        "../scripts/learnability_train.py"


rule learnability_table:
    input:
        summaries=expand(f"{LEARNABILITY_RUN}.csv", arch=ARCHS, task=TASKS),
        curves=expand(f"{LEARNABILITY_RUN}_curve.csv", arch=ARCHS, task=TASKS),
        default_histories=expand(f"{DEFAULT_RUN}/train_log.csv", arch=ARCHS, task=TASKS),
    output:
        table=LEARNABILITY["table"],
        curves=LEARNABILITY["curves"],
    log:
        "results/logs/tables/learnability.log",
    benchmark:
        "results/benchmarks/tables/learnability.tsv"
    conda:
        CONDA_ENV
    params:
        default_steps=config["training"]["max_steps"],
        eval_every=config["training"]["eval_every"],
    script:
        "../scripts/learnability_table.py"


rule learnability_figure:
    input:
        table=LEARNABILITY["table"],
        curves=LEARNABILITY["curves"],
    output:
        png="benchmarks/learnability.png",
        pdf="benchmarks/learnability.pdf",
    log:
        "results/logs/figures/learnability.log",
    benchmark:
        "results/benchmarks/figures/learnability.tsv"
    conda:
        CONDA_ENV
    script:
        "../scripts/learnability_figure.py"
