rule task_data:
    output:
        "results/data/{task}/{split}_L{length}.parquet",
    log:
        "results/logs/data/{task}/{split}_L{length}.log",
    benchmark:
        "results/benchmarks/data/{task}/{split}_L{length}.tsv"
    retries: config["retries"]
    conda:
        CONDA_ENV
    params:
        n=lambda wc: config["data"][wc.split],
        seed=config["data_seed"],
        task_params=lambda wc: task_params(wc.task),
    script:
        "../scripts/task_data.py"
