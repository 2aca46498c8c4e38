"""Run the decode engine's kernels eagerly (no graph) on a small GQA model for compute-sanitizer:

    compute-sanitizer --tool memcheck python scripts/sanitize_engine.py
    compute-sanitizer --tool racecheck python scripts/sanitize_engine.py fp16

Every weight format, split-KV attention past 4 slices of 64 positions, programmatic launch on; the
q4f16_1 engine with attention streaming gate_up into the L2 (which only the step verification of a
graph engine would otherwise switch on).
"""
import sys

import numpy as np

from autosched.build import Builder
from autosched.engine.engine import Engine, gate_up_prefetch_bytes, matmul_shapes
from autosched.models.llama2c import LlamaConfig, random_weights

CFG = LlamaConfig(dim=128, hidden_dim=352, n_layers=2, n_heads=4, n_kv_heads=2, vocab_size=512, seq_len=512)


def main(formats):
    w = random_weights(CFG, 9)
    tokens = np.random.default_rng(1).integers(0, CFG.vocab_size, 270)
    with Builder() as b:
        for fmt in formats:
            eng = Engine(CFG, w, fmt, builder=b, graphs=False, splits=5)
            if fmt == "q4f16_1":
                eng.attn_prefetch = gate_up_prefetch_bytes(*matmul_shapes(CFG)["gate_up"], fmt)
            for t in tokens:
                logits = eng.step(int(t))
            print(fmt, "ok", float(logits.abs().max()), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:] or ["fp32", "fp16", "int8", "q4f16_1"])
