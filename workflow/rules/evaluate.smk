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


# The untrained twin of a run: saved at the run's initial weights and evaluated like it
# in one job (a separate job would start torch once more per run).
rule untrained:
    input:
        unpack(test_data([TRAIN_LENGTH])),
        probe=data_file("probe", TRAIN_LENGTH),
    output:
        **model_files(model_dir=UNTRAINED_MODEL_DIR),
        **test_state_files(UNTRAINED_STATES_DIR, [TRAIN_LENGTH]),
        behaviour=f"results/behaviour/{UNTRAINED_RUN}.csv",
        probe_states=UNTRAINED_PROBE_STATES,
    log:
        f"results/logs/untrained/{RUN}.log",
    benchmark:
        f"results/benchmarks/untrained/{RUN}.tsv"
    conda:
        CONDA_ENV
    threads: config["training"]["threads"]
    resources:
        gpu=gpu_jobs(),
    params:
        spec=model_spec_of_job,
        seed=lambda wc: int(wc.seed),
        test_sequences=config["states"]["test_sequences"],
        device=config["training"]["device"],
        mamba=mamba_settings,
    script:
        "../scripts/untrained.py"
