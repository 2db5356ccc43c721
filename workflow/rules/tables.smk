localrules:
    aggregate_table,
    params_table,


rule aggregate_table:
    input:
        lambda wc: per_run(f"results/{wc.stage}/{RUN}.csv"),
    output:
        "results/tables/{stage}.csv",
    log:
        "results/logs/tables/{stage}.log",
    benchmark:
        "results/benchmarks/tables/{stage}.tsv"
    wildcard_constraints:
        stage="behaviour|probes",
    conda:
        CONDA_ENV
    script:
        "../scripts/aggregate_table.py"


rule params_table:
    input:
        per_run(f"{MODEL_DIR}/model.json"),
    output:
        "results/tables/params.csv",
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
