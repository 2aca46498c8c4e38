"""Benchmarks: each times our kernels, ceilings and baselines in one process and writes JSON."""
