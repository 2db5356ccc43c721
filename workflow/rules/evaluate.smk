rule evaluate:
    input:
        unpack(model_files),
        unpack(test_data(EVAL_LENGTHS)),
        probe=data_file("probe", TRAIN_LENGTH),
    output:
        **test_state_files(),
        behaviour=f"results/behaviour/{RUN}.csv",
        probe_states=PROBE_STATES,
    log:
        f"results/logs/evaluate/{RUN}.log",
    benchmark:
        f"results/benchmarks/evaluate/{RUN}.tsv"
    retries: config["retries"]
    conda:
        CONDA_ENV
    threads: config["training"]["threads"]
    resources:
        gpu=model_gpu,
    params:
        test_sequences=stored_test_sequences,
        probe_sequences=lambda wc: (
            PRETRAINED_CONFIG["probe_sequences"] if is_pretrained(wc) else None
        ),
        device=config["training"]["device"],
        mamba=mamba_settings,
    script:
        "../scripts/evaluate.py"
