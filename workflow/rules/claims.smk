localrules:
    claims,


rule claims:
    input:
        **({"conv1d": TABLES["conv1d"]} if CONV1D_FAMILIES else {}),
        **(
            {
                "pretrained_probes": TABLES["pretrained_probes"],
                "pretrained_erasures": TABLES["pretrained_erasures"],
            }
            if PRETRAINED
            else {}
        ),
        **({"patching": TABLES["patching"]} if PATCHING_TASKS else {}),
        behaviour=TABLES["behaviour"],
        probes=TABLES["probes"],
        erasures=TABLES["erasures"],
        readability=TABLES["readability_vs_causality"],
    output:
        table=report(
            "results/claims.csv", caption="../report/claims.rst", category="Claims"
        ),
        subclaims="results/subclaims.csv",
        robustness="results/robustness.csv",
        extension="results/extension_claims.csv",
        markdown="results/claims.md",
    log:
        "results/logs/claims.log",
    benchmark:
        "results/benchmarks/claims.tsv"
    conda:
        CONDA_ENV
    params:
        choices=claims_choices(),
        alternatives=config["claims"]["alternatives"],
        learnability=learnability_rows(),
        scale=settings.run_scale(config, PRETRAINED, PATCHING_TASKS),
        train_length=TRAIN_LENGTH,
    script:
        "../scripts/claims.py"
