localrules:
    readability_table,


rule erasures:
    input:
        unpack(model_files),
        unpack(test_data(config["erasures"]["eval_lengths"])),
        probe=PROBE_STATES,
    output:
        f"results/erasures/{RUN}.csv",
    log:
        f"results/logs/erasures/{RUN}.log",
    benchmark:
        f"results/benchmarks/erasures/{RUN}.tsv"
    conda:
        CONDA_ENV
    threads: config["training"]["threads"]
    resources:
        gpu=model_gpu,
    params:
        erasures=erasure_settings_of_job,
        probe=config["probes"],
        device=config["training"]["device"],
        mamba=mamba_settings,
    script:
        "../scripts/erasures.py"


rule readability_table:
    input:
        probes=TABLES["probes"],
        erasures=TABLES["erasures"],
    output:
        TABLES["readability_vs_causality"],
    log:
        "results/logs/tables/readability_vs_causality.log",
    benchmark:
        "results/benchmarks/tables/readability_vs_causality.tsv"
    conda:
        CONDA_ENV
    script:
        "../scripts/readability_table.py"
