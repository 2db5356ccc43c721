"""Stage 4, the measurements of trained models: behaviour, hidden states, probes,
erasures, activation patching and the Conv1D inference ablation."""
