localrules:
    learning_curves_figure,
    probe_profiles_figure,
    behaviour_figure,
    erasure_figures,


rule learning_curves_figure:
    input:
        curves=TABLES["learning_curves"],
        training=TABLES["training"],
    output:
        png=report(
            "results/figures/learning_curves.png",
            caption="../report/learning_curves.rst",
            category="Training",
        ),
        pdf="results/figures/learning_curves.pdf",
    log:
        "results/logs/figures/learning_curves.log",
    benchmark:
        "results/benchmarks/figures/learning_curves.tsv"
    conda:
        CONDA_ENV
    script:
        "../scripts/learning_curves_figure.py"


rule probe_profiles_figure:
    input:
        TABLES["probes"],
    output:
        png=report(
            "results/figures/probe_profiles.png",
            caption="../report/probe_profiles.rst",
            category="Probes",
        ),
        pdf="results/figures/probe_profiles.pdf",
    log:
        "results/logs/figures/probe_profiles.log",
    benchmark:
        "results/benchmarks/figures/probe_profiles.tsv"
    conda:
        CONDA_ENV
    params:
        fit_length=TRAIN_LENGTH,
    script:
        "../scripts/probe_profiles_figure.py"


rule behaviour_figure:
    input:
        TABLES["behaviour"],
    output:
        png=report(
            "results/figures/behaviour.png",
            caption="../report/behaviour.rst",
            category="Behaviour",
        ),
        pdf="results/figures/behaviour.pdf",
    log:
        "results/logs/figures/behaviour.log",
    benchmark:
        "results/benchmarks/figures/behaviour.tsv"
    conda:
        CONDA_ENV
    params:
        train_length=TRAIN_LENGTH,
    script:
        "../scripts/behaviour_figure.py"


rule erasure_figures:
    input:
        erasures=TABLES["erasures"],
        readability=TABLES["readability_vs_causality"],
    output:
        profiles_png=report(
            "results/figures/erasures.png",
            caption="../report/erasures.rst",
            category="Erasures",
        ),
        profiles_pdf="results/figures/erasures.pdf",
        ood_png=report(
            "results/figures/erasure_ood.png",
            caption="../report/erasure_ood.rst",
            category="Erasures",
        ),
        ood_pdf="results/figures/erasure_ood.pdf",
    log:
        "results/logs/figures/erasures.log",
    benchmark:
        "results/benchmarks/figures/erasures.tsv"
    conda:
        CONDA_ENV
    params:
        fit_length=TRAIN_LENGTH,
    script:
        "../scripts/erasure_figures.py"
