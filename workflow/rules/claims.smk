localrules:
    claims,


rule claims:
    input:
        **({"conv1d": "results/tables/conv1d.csv"} if CONV1D_FAMILIES else {}),
        **(
            {
                "pretrained_probes": "results/tables/pretrained_probes.csv",
                "pretrained_ablations": "results/tables/pretrained_ablations.csv",
            }
            if PRETRAINED
            else {}
        ),
        **({"patching": "results/tables/patching.csv"} if PATCHING_TASKS else {}),
        behaviour="results/tables/behaviour.csv",
        probes="results/tables/probes.csv",
        ablations="results/tables/ablations.csv",
        readability="results/tables/readability_vs_causality.csv",
    output:
        table=report(
            "results/claims.csv", caption="../report/claims.rst", category="Claims"
        ),
        markdown="results/claims.md",
    log:
        "results/logs/claims.log",
    benchmark:
        "results/benchmarks/claims.tsv"
    conda:
        CONDA_ENV
    params:
        bootstrap=config["statistics"],
        scale=settings.run_scale(config, PRETRAINED, PATCHING_TASKS),
        train_length=TRAIN_LENGTH,
    script:
        "../scripts/claims.py"
