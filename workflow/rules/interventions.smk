localrules:
    readability_table,


rule interventions:
    input:
        unpack(model_files),
        unpack(test_data(config["interventions"]["eval_lengths"])),
        probe=PROBE_STATES,
    output:
        f"results/ablations/{RUN}.csv",
    log:
        f"results/logs/interventions/{RUN}.log",
    benchmark:
        f"results/benchmarks/interventions/{RUN}.tsv"
    conda:
        CONDA_ENV
    threads: config["training"]["threads"]
    resources:
        gpu=model_gpu,
    params:
        interventions=intervention_settings,
        probe=config["probes"],
        device=config["training"]["device"],
        mamba=mamba_settings,
    script:
        "../scripts/interventions.py"


rule readability_table:
    input:
        probes=TABLES["probes"],
        ablations=TABLES["ablations"],
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
