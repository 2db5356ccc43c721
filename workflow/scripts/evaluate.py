"""Behaviour at every evaluation length and every layer's states of one trained run."""

from pathlib import Path

from statelayers import console, files, runtime
from statelayers.measure.evaluation import evaluate_run
from statelayers.models.tagger import load_model

sm = snakemake  # noqa: F821
console.start_job(sm.log[0], sm.threads)
model = load_model(Path(sm.input.weights).parent, sm.params.mamba, sm.params.device)
rows = evaluate_run(
    model,
    probe_file=sm.input.probe,
    probe_states=sm.output.probe_states,
    test_files=runtime.length_inputs(sm.input),
    test_states=runtime.length_inputs(sm.output),
    test_sequences=sm.params.test_sequences,
    probe_sequences=sm.params.probe_sequences,
)
files.write_csv(files.keyed_frame(rows, runtime.run_key(sm.wildcards)), sm.output.behaviour)
