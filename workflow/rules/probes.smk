rule probes:
    input:
        **test_state_files(),
        probe=PROBE_STATES,
    output:
        f"results/probes/{RUN}.csv",
    log:
        f"results/logs/probes/{RUN}.log",
    benchmark:
        f"results/benchmarks/probes/{RUN}.tsv"
    conda:
        CONDA_ENV
    threads: 1
    params:
        probe=config["probes"],
        fit_length=TRAIN_LENGTH,
        control=True,
    script:
        "../scripts/probes.py"


use rule probes as probes_untrained with:
    input:
        **test_state_files(UNTRAINED_STATES_DIR, [TRAIN_LENGTH]),
        probe=UNTRAINED_PROBE_STATES,
    output:
        f"results/probes/{UNTRAINED_RUN}.csv",
    log:
        f"results/logs/probes/{UNTRAINED_RUN}.log",
    benchmark:
        f"results/benchmarks/probes/{UNTRAINED_RUN}.tsv"
    params:
        probe=config["probes"],
        fit_length=TRAIN_LENGTH,
        control=False,  # only the twins' probe accuracy is read (with_baselines)
