localrules:
    fetch_pretrained,
    pretrained_table,
    pretrained_figure,


# GPU tokens a job on a pretrained model takes (its fine-tuning under `train`, and its
# evaluate, erasures and patching jobs: model_gpu in common.smk). `--resources gpu=K`
# means K small-model jobs at once on one GPU (config/paper.yaml, docs/cost.md); a
# pretrained job counts as this many of them. Fine-tuning Pythia-410M holds about 7 GB of
# GPU memory (fp32 weights, gradients and AdamW state, bf16 activations) and keeps the GPU
# busy, where a small model's process holds about 0.5 GB, mostly its CUDA context, and
# waits on kernel launches (estimates; benchmarks/gpu_throughput.py measures the latter).
# Snakemake lowers a job's request to the --resources total, so with K <= 8 a pretrained
# job has the GPU to itself, and with K > 8 it runs beside at most K - 8 small jobs. On a
# cluster the profiles set `gpu` per rule (one GPU each), so this never reaches sbatch.
PRETRAINED_GPU_TOKENS = 8


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
