"""Performance verification: the q4f16_1 (or fp16) GEMV config an engine serves is the fastest of the best few
measured ones when timed the way a decode step runs them, not only under the tuning protocol.

The tuner times one launch after an L2 flush; a step launches the GEMV inside a CUDA graph with
programmatic dependent launch, right after another kernel, with its weights cold.  The two rank
configs differently (H100, 2026-11-23: the qkv GEMV's tuning winner took 12.6 us in a graph where
another of the top configs took 10.7).  So the engine times its top candidates per matmul shape in
a graph of back-to-back launches over rotating weight copies (more bytes than the L2) and keeps the
fastest.
"""

from __future__ import annotations

from autosched.engine.matmul import Matmul
from autosched.measure.protocol import time_graph
from autosched.selection import fastest

# torch and cuda.core are imported inside functions: optional / slow to import, a CPU install runs without
# them


def matmul_graph_us(matmul, copies: int, count: int) -> float:
    """Per-launch time of a loaded Matmul holding `copies` layers, in a graph of `count` launches."""
    import torch
    from cuda.core import Stream
    x = torch.randn(matmul.k, device="cuda").half()
    out = torch.empty(matmul.n, device="cuda", dtype=torch.float16)
    return time_graph(lambda i: matmul(Stream.from_handle(torch.cuda.current_stream().cuda_stream), i, out, x),
                      copies, count)


def fastest_in_graph(name: str, n: int, k: int, choices: list, device_info, builder, *, pdl: bool = True,
                     copies: int = 8, count: int = 32, seed: int = 0, fmt: str = "q4f16_1"):
    """(the Candidate that is fastest in a graph, [(candidate, us)] for every candidate, us None for
    one that failed).  The weights are random (a GEMV's time does not depend on their values),
    packed per config (a config's weight layout is part of it) and copied to more bytes than the L2
    holds."""
    import torch
    g = torch.Generator(device="cuda").manual_seed(seed)
    w = torch.randn((n, k), device="cuda", generator=g)
    cands = [Matmul(name, fmt, n, k, "half", "half", device_info, config=c.config, pdl=pdl) for c in choices]
    list(builder.build_many([m.spec for m in cands]))          # in parallel
    matmul_of = {id(c): m for c, m in zip(choices, cands)}

    def time_one(choice) -> float:
        m = matmul_of[id(choice)]
        try:
            m.load(builder)
            m.add_layer_copies(w, copies)
            return matmul_graph_us(m, copies, count)
        finally:
            m.layers.clear()
            torch.cuda.empty_cache()
    best, timed = fastest(choices, time_one, what="in a CUDA graph", strict=True)
    return best, [(t.candidate, t.us) for t in timed]
