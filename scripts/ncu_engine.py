"""Run decode steps of a model on the engine eagerly (no graph, no programmatic launch), for ncu:
the per-kernel breakdown of one step.

    ncu --profile-from-start off --metrics gpu__time_duration.sum \\
        -k 'regex:^(embed_norm|rope_attention|gemv|argmax)' \\
        --launch-skip $((4 * KERNELS_PER_STEP)) --launch-count KERNELS_PER_STEP --csv \\
        python scripts/ncu_engine.py llama2-7b q4f16_1

KERNELS_PER_STEP is printed first (1 + 5 a layer + 2).  The profiler starts after the engine is
built, so the engine's own timing of its GEMV candidates (engine/verify.py) is not counted.
"""
import sys

import torch

from autosched.engine.engine import Engine
from autosched.engine.weights import random_weights_torch
from autosched.models.llama2c import SEED_CONFIGS


def main(model, fmt, steps=10):
    cfg = SEED_CONFIGS[model]
    print("kernels per step:", 1 + 5 * cfg.n_layers + 2, flush=True)
    w = random_weights_torch(cfg, 1234, "cuda")
    eng = Engine(cfg, w, fmt, graphs=False, pdl=False, step="kernels")
    del w
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStart()
    for t in range(steps):
        eng.step(1 + t)
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStop()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
