localrules:
    probe_profiles_figure,
    behaviour_figure,


rule probe_profiles_figure:
    input:
        "results/tables/probes.csv",
    output:
        png="results/figures/probe_profiles.png",
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
        "results/tables/behaviour.csv",
    output:
        png="results/figures/behaviour.png",
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
