rule behaviour:
    input:
        unpack(model_files),
        unpack(test_data(EVAL_LENGTHS)),
    output:
        f"results/behaviour/{RUN}.csv",
    log:
        f"results/logs/behaviour/{RUN}.log",
    benchmark:
        f"results/benchmarks/behaviour/{RUN}.tsv"
    retries: config["retries"]
    conda:
        CONDA_ENV
    threads: config["training"]["threads"]
    resources:
        gpu=gpu_jobs(),
    params:
        device=config["training"]["device"],
        mamba_scan=mamba_scan,
    script:
        "../scripts/behaviour.py"


rule probe_states:
    input:
        unpack(model_files),
        data=data_file("probe", TRAIN_LENGTH),
    output:
        f"{STATES_DIR}/probe_L{TRAIN_LENGTH}.parquet",
    log:
        f"results/logs/probe_states/{RUN}.log",
    benchmark:
        f"results/benchmarks/probe_states/{RUN}.tsv"
    retries: config["retries"]
    conda:
        CONDA_ENV
    threads: config["training"]["threads"]
    resources:
        gpu=gpu_jobs(),
    params:
        sequences=config["data"]["probe"],
        device=config["training"]["device"],
        mamba_scan=mamba_scan,
    script:
        "../scripts/states.py"


rule states:
    input:
        unpack(model_files),
        unpack(test_data(EVAL_LENGTHS)),
    output:
        tests=expand(
            f"{STATES_DIR}/test_L{{length}}.parquet",
            length=EVAL_LENGTHS,
            allow_missing=True,
        ),
    log:
        f"results/logs/states/{RUN}.log",
    benchmark:
        f"results/benchmarks/states/{RUN}.tsv"
    retries: config["retries"]
    conda:
        CONDA_ENV
    threads: config["training"]["threads"]
    resources:
        gpu=gpu_jobs(),
    params:
        sequences=config["states"]["test_sequences"],
        device=config["training"]["device"],
        mamba_scan=mamba_scan,
    script:
        "../scripts/states.py"
