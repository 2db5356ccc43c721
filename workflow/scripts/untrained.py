"""The untrained twin of one run: its architecture at the run's initial weights (no
training step), saved, then evaluated like a trained run (behaviour and every layer's states)."""

from pathlib import Path

from statelayers import console, files, runtime
from statelayers.measure.evaluation import evaluate_run
from statelayers.training import untrained_checkpoint

sm = snakemake  # noqa: F821
console.start_job(sm.log[0], sm.threads)
model = untrained_checkpoint(
    sm.params.spec, sm.params.seed, Path(sm.output.weights).parent, sm.params.mamba, sm.params.device
)
rows = evaluate_run(
    model,
    probe_file=sm.input.probe,
    probe_states=sm.output.probe_states,
    test_files=runtime.length_inputs(sm.input),
    test_states=runtime.length_inputs(sm.output),
    test_sequences=sm.params.test_sequences,
)
files.write_csv(files.keyed_frame(rows, runtime.run_key(sm.wildcards)), sm.output.behaviour)
