rule train:
    input:
        unpack(backbone_input),
        unpack(corpus_input),
        validation=data_file("validation", TRAIN_LENGTH),
    output:
        weights=model_output(model_files()["weights"]),
        meta=model_output(model_files()["meta"]),
        history=f"{MODEL_DIR}/train_log.csv",
    log:
        f"results/logs/train/{RUN}.log",
    benchmark:
        f"results/benchmarks/train/{RUN}.tsv"
    priority: train_priority
    retries: config["retries"]
    conda:
        CONDA_ENV
    threads: config["training"]["threads"]
    resources:
        gpu=model_gpu,
    params:
        spec=model_spec,
        training=train_settings,
        seed=lambda wc: int(wc.seed),
        data_seed=config["data_seed"],
        train_length=TRAIN_LENGTH,
        device=config["training"]["device"],
        mamba=mamba_settings,
    script:
        "../scripts/train.py"
