rule task_data:
    input:
        unpack(corpus_input),
    output:
        "results/data/{task}/{split}_L{length}.parquet",
    log:
        "results/logs/data/{task}/{split}_L{length}.log",
    benchmark:
        "results/benchmarks/data/{task}/{split}_L{length}.tsv"
    conda:
        CONDA_ENV
    params:
        n=lambda wc: config["data"][wc.split],
        seed=config["data_seed"],
        task_params=lambda wc: task_params(wc.task),
    script:
        "../scripts/task_data.py"


rule code_corpus:
    output:
        corpus=CODE_CORPUS,
        table=report(
            TABLES["codedepth_corpus"],
            caption="../report/table.rst",
            category="Tables",
        ),
    log:
        "results/logs/data/codedepth/corpus.log",
    benchmark:
        "results/benchmarks/data/codedepth/corpus.tsv"
    conda:
        CONDA_ENV
    params:
        corpus=config["corpus"],
    script:
        "../scripts/code_corpus.py"
