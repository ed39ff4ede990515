"""Training the span selector: data, decoder-faithful sequences, LoRA, export (the [train] extra)."""
