localrules:
    fetch_pretrained,
    pretrained_table,
    pretrained_figure,


rule fetch_pretrained:
    """Needs the network (or a local path as the model's source): a local rule, so on a
    cluster it runs on the submitting host, where compute nodes may have no network."""
    output:
        directory(backbone_dir("{model}")),
    log:
        "results/logs/fetch_pretrained/{model}.log",
    benchmark:
        "results/benchmarks/fetch_pretrained/{model}.tsv"
    wildcard_constraints:
        model="|".join(re.escape(name) for name in PRETRAINED) or "(?!)",
    conda:
        CONDA_ENV
    params:
        source=lambda wc: PRETRAINED_SOURCES[wc.model],
    script:
        "../scripts/fetch_pretrained.py"


rule pretrained_table:
    input:
        lambda wc: pretrained_runs(f"results/{wc.stage}/{RUN}.csv"),
    output:
        report(
            "results/tables/pretrained_{stage}.csv",
            caption="../report/table.rst",
            category="Pretrained",
        ),
    log:
        "results/logs/tables/pretrained_{stage}.log",
    benchmark:
        "results/benchmarks/tables/pretrained_{stage}.tsv"
    wildcard_constraints:
        stage="behaviour|probes|erasures",
    conda:
        CONDA_ENV
    script:
        "../scripts/aggregate_table.py"


rule pretrained_figure:
    input:
        probes=TABLES["pretrained_probes"],
        erasures=TABLES["pretrained_erasures"],
    output:
        png=report(
            "results/figures/pretrained_profiles.png",
            caption="../report/pretrained_profiles.rst",
            category="Pretrained",
        ),
        pdf="results/figures/pretrained_profiles.pdf",
    log:
        "results/logs/figures/pretrained_profiles.log",
    benchmark:
        "results/benchmarks/figures/pretrained_profiles.tsv"
    conda:
        CONDA_ENV
    params:
        fit_length=TRAIN_LENGTH,
    script:
        "../scripts/pretrained_figure.py"
