localrules:
    patching_table,
    patching_figure,


rule patching:
    input:
        unpack(model_files),
        test=data_file("test", TRAIN_LENGTH),
    output:
        "results/patching/{arch}/{task}/seed{seed}.csv",
    log:
        f"results/logs/patching/{RUN}.log",
    benchmark:
        f"results/benchmarks/patching/{RUN}.tsv"
    wildcard_constraints:
        task="|".join(PATCHING_TASKS) or "(?!)",
    conda:
        CONDA_ENV
    threads: config["training"]["threads"]
    resources:
        gpu=model_gpu,
    params:
        patching={k: v for k, v in config["patching"].items() if k != "enabled"},
        task_params=lambda wc: task_params(wc.task),
        device=config["training"]["device"],
        mamba=mamba_settings,
    script:
        "../scripts/patching.py"


rule patching_table:
    input:
        per_run(f"results/patching/{RUN}.csv", PATCHING_TASKS)
        + pretrained_runs(f"results/patching/{RUN}.csv", PATCHING_TASKS),
    output:
        report(
            TABLES["patching"],
            caption="../report/table.rst",
            category="Patching",
        ),
    log:
        "results/logs/tables/patching.log",
    benchmark:
        "results/benchmarks/tables/patching.tsv"
    conda:
        CONDA_ENV
    script:
        "../scripts/aggregate_table.py"


rule patching_figure:
    input:
        TABLES["patching"],
    output:
        png=report(
            "results/figures/patching.png",
            caption="../report/patching.rst",
            category="Patching",
        ),
        pdf="results/figures/patching.pdf",
    log:
        "results/logs/figures/patching.log",
    benchmark:
        "results/benchmarks/figures/patching.tsv"
    conda:
        CONDA_ENV
    script:
        "../scripts/patching_figure.py"
