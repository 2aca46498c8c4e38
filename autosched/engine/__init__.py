"""The decode engine: a Llama-family model served by autosched's kernels (needs torch and a GPU)."""
