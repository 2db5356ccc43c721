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
    conda:
        CONDA_ENV
    threads: config["training"]["threads"]
    resources:
        gpu=model_gpu,
    params:
        run=run_params(model_spec_of_job, train_settings_of_job),
    script:
        "../scripts/train.py"
