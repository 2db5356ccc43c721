localrules:
    aggregate_table,
    probes_table,
    params_table,
    training_tables,
    depth_table,
    summary_tables,


rule aggregate_table:
    input:
        lambda wc: per_run(f"results/{wc.stage}/{RUN}.csv"),
    output:
        report(
            "results/tables/{stage}.csv",
            caption="../report/table.rst",
            category="Tables",
        ),
    log:
        "results/logs/tables/{stage}.log",
    benchmark:
        "results/benchmarks/tables/{stage}.tsv"
    wildcard_constraints:
        stage="behaviour|erasures",
    conda:
        CONDA_ENV
    script:
        "../scripts/aggregate_table.py"


rule probes_table:
    input:
        trained=per_run(f"results/probes/{RUN}.csv"),
        untrained=per_run(f"results/probes/{UNTRAINED_RUN}.csv"),
    output:
        report(
            TABLES["probes"],
            caption="../report/table.rst",
            category="Tables",
        ),
    log:
        "results/logs/tables/probes.log",
    benchmark:
        "results/benchmarks/tables/probes.tsv"
    conda:
        CONDA_ENV
    script:
        "../scripts/probes_table.py"


rule params_table:
    input:
        per_run(f"{MODEL_DIR}/model.json"),
    output:
        TABLES["params"],
    log:
        "results/logs/tables/params.log",
    benchmark:
        "results/benchmarks/tables/params.tsv"
    conda:
        CONDA_ENV
    params:
        target_params=config["model"]["target_params"],
    script:
        "../scripts/params_table.py"


rule training_tables:
    input:
        meta=per_run(f"{MODEL_DIR}/model.json"),
        history=per_run(f"{MODEL_DIR}/train_log.csv"),
    output:
        training=report(
            TABLES["training"],
            caption="../report/table.rst",
            category="Tables",
        ),
        curves=TABLES["learning_curves"],
    log:
        "results/logs/tables/training.log",
    benchmark:
        "results/benchmarks/tables/training.tsv"
    conda:
        CONDA_ENV
    script:
        "../scripts/training_tables.py"


rule depth_table:
    input:
        lambda wc: expand(
            f"results/data/{wc.task}/test_L{{length}}.parquet", length=EVAL_LENGTHS
        ),
    output:
        "results/tables/{task}_depths.csv",
    log:
        "results/logs/tables/{task}_depths.log",
    benchmark:
        "results/benchmarks/tables/{task}_depths.tsv"
    wildcard_constraints:
        task="dyck|codedepth",
    conda:
        CONDA_ENV
    params:
        max_depth=lambda wc: task_params(wc.task)["max_depth"],
        column=lambda wc: "depth" if wc.task == "dyck" else "labels",
        lengths=EVAL_LENGTHS,
    script:
        "../scripts/depth_table.py"


rule summary_tables:
    input:
        behaviour=TABLES["behaviour"],
        probes=TABLES["probes"],
    output:
        behaviour=TABLES["behaviour_summary"],
        probes=TABLES["probe_summary"],
        profile_shapes=report(
            TABLES["profile_shapes"],
            caption="../report/table.rst",
            category="Tables",
        ),
    log:
        "results/logs/tables/summaries.log",
    benchmark:
        "results/benchmarks/tables/summaries.tsv"
    conda:
        CONDA_ENV
    params:
        statistics=config["statistics"],
    script:
        "../scripts/summary_tables.py"
