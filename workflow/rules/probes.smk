rule probes:
    input:
        probe=rules.probe_states.output[0],
        tests=rules.states.output.tests,
    output:
        f"results/probes/{RUN}.csv",
    log:
        f"results/logs/probes/{RUN}.log",
    benchmark:
        f"results/benchmarks/probes/{RUN}.tsv"
    retries: config["retries"]
    conda:
        CONDA_ENV
    threads: 1
    params:
        probe=config["probes"],
        fit_length=TRAIN_LENGTH,
        eval_lengths=EVAL_LENGTHS,
    script:
        "../scripts/probes.py"
