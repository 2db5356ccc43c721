# `snakemake --cores all sweep`: short training runs over each family's sweep.blocks x
# sweep.start_token x sweep.lr x sweep.batch_size (at equal sequences) for every
# architecture and task, judged on validation accuracy only (statelayers.sweep).
# Not part of the default target; nothing here reads probes, erasures or claims.


localrules:
    sweep,
    sweep_table,
    sweep_figure,


rule sweep:
    input:
        TABLES["sweep"],
        "results/figures/sweep.png",
        "results/figures/sweep.pdf",


rule sweep_train:
    input:
        unpack(corpus_input),
        validation=data_file("validation", TRAIN_LENGTH),
    output:
        f"results/sweep/{SWEEP_RUN}.csv",
    log:
        f"results/logs/sweep/{SWEEP_RUN}.log",
    benchmark:
        f"results/benchmarks/sweep/{SWEEP_RUN}.tsv"
    wildcard_constraints:
        block=r"[A-Za-z0-9_-]+",
        start="0|1",
        lr=r"[0-9.eE+-]+",
        batch_size=r"\d+",
    priority: train_priority
    conda:
        CONDA_ENV
    threads: rules.train.rule.resources["_cores"]
    resources:
        gpu=model_gpu,
    params:
        run=run_params(sweep_spec_of_job, sweep_training_of_job),
        point=sweep_grid_point,
    script:
        "../scripts/sweep_train.py"


rule sweep_table:
    input:
        sweep_runs(),
    output:
        report(
            TABLES["sweep"],
            caption="../report/table.rst",
            category="Sweep",
        ),
    log:
        "results/logs/tables/sweep.log",
    benchmark:
        "results/benchmarks/tables/sweep.tsv"
    conda:
        CONDA_ENV
    script:
        "../scripts/sweep_table.py"


rule sweep_figure:
    input:
        TABLES["sweep"],
    output:
        png=report(
            "results/figures/sweep.png",
            caption="../report/sweep.rst",
            category="Sweep",
        ),
        pdf="results/figures/sweep.pdf",
    log:
        "results/logs/figures/sweep.log",
    benchmark:
        "results/benchmarks/figures/sweep.tsv"
    conda:
        CONDA_ENV
    script:
        "../scripts/sweep_figure.py"
