localrules:
    learning_curves_figure,
    probe_profiles_figure,
    behaviour_figure,
    ablation_figures,


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


rule ablation_figures:
    input:
        ablations=TABLES["ablations"],
        readability=TABLES["readability_vs_causality"],
    output:
        profiles_png=report(
            "results/figures/ablations.png",
            caption="../report/ablations.rst",
            category="Interventions",
        ),
        profiles_pdf="results/figures/ablations.pdf",
        ood_png=report(
            "results/figures/ablation_ood.png",
            caption="../report/ablation_ood.rst",
            category="Interventions",
        ),
        ood_pdf="results/figures/ablation_ood.pdf",
    log:
        "results/logs/figures/ablations.log",
    benchmark:
        "results/benchmarks/figures/ablations.tsv"
    conda:
        CONDA_ENV
    params:
        fit_length=TRAIN_LENGTH,
    script:
        "../scripts/ablation_figures.py"
