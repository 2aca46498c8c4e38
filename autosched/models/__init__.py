"""Llama-family models: checkpoint formats, tokenizer, and the float64 reference decoder."""
