"""autosched: finds the fastest CUDA kernel for an LLM-inference operator on the GPU it runs on."""

__version__ = "0.1.0"
