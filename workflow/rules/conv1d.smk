localrules:
    conv1d_tables,
    conv1d_figure,


rule conv1d_inference:
    input:
        unpack(model_files),
        unpack(test_data(EVAL_LENGTHS)),
    output:
        f"results/conv1d/{RUN}.csv",
    log:
        f"results/logs/conv1d/{RUN}.log",
    benchmark:
        f"results/benchmarks/conv1d/{RUN}.tsv"
    wildcard_constraints:
        arch="|".join(SSM),
    conda:
        CONDA_ENV
    threads: config["training"]["threads"]
    resources:
        gpu=gpu_jobs(),
    params:
        device=config["training"]["device"],
        mamba=mamba_settings,
    script:
        "../scripts/conv1d_inference.py"


rule conv1d_tables:
    input:
        behaviour=TABLES["behaviour"],
        inference=expand(
            "results/conv1d/{arch}/{task}/seed{seed}.csv",
            arch=CONV1D_FAMILIES,
            task=TASKS,
            seed=SEEDS,
        ),
    output:
        table=TABLES["conv1d"],
        summary=report(
            TABLES["conv1d_summary"],
            caption="../report/table.rst",
            category="Tables",
        ),
    log:
        "results/logs/tables/conv1d.log",
    benchmark:
        "results/benchmarks/tables/conv1d.tsv"
    conda:
        CONDA_ENV
    params:
        statistics=config["statistics"],
    script:
        "../scripts/conv1d_tables.py"


rule conv1d_figure:
    input:
        TABLES["conv1d_summary"],
    output:
        png=report(
            "results/figures/conv1d.png",
            caption="../report/conv1d.rst",
            category="Figures",
        ),
        pdf="results/figures/conv1d.pdf",
    log:
        "results/logs/figures/conv1d.log",
    benchmark:
        "results/benchmarks/figures/conv1d.tsv"
    conda:
        CONDA_ENV
    script:
        "../scripts/conv1d_figure.py"
