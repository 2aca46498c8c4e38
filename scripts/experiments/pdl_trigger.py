"""Device experiment: a 7B layer's four weight streams (boundary_cost.KERNELS, 32 layers in one CUDA
graph) with programmatic launch, by where each kernel lets its successor launch, whether the
successor asks the L2 for its first weights before its wait, and whether the weights are streamed
with an L2 evict-first policy (pdl_trigger.cuh).  Two rounds over the modes, in alternating order.

    python scripts/experiments/pdl_trigger.py OUT_DIR
"""
import sys
from pathlib import Path

import numpy as np
import torch

from autosched.benchmarks.decode import copy_bandwidth_gbps
from autosched.build import Builder
from autosched.launch import LoadedKernel
from autosched.runtime import ptr
from autosched.templates.base import kernel_source
from layer_streams import KERNELS, LAYERS, setup, graph_us_a_layer as timed, stream_spec, write

HERE = Path(__file__).parent
UNROLL = 4
# label: (pdl, prefetch, trigger, evict)
MODES = {"plain": (False, 1, 0, 0), "pdl trigger first": (True, 1, 0, 0),
         "pdl no prefetch": (True, 0, 0, 0), "pdl trigger half": (True, 1, 1, 0),
         "pdl trigger end": (True, 1, 2, 0), "pdl evict-first": (True, 1, 0, 1),
         "pdl half + evict-first": (True, 1, 1, 1), "pdl end + evict-first": (True, 1, 2, 1),
         "plain evict-first": (False, 1, 0, 1)}


def source() -> str:
    return (HERE / "pdl_trigger.cuh").read_text().replace('#include "pdl.cuh"\n', kernel_source("pdl.cuh"))


def spec(p, t, e, threads, arch):
    return stream_spec("pdl_trigger", (("p", p), ("t", t), ("e", e)), source(),
                       f"layer_stream2<{p}, {t}, {e}, {UNROLL}>", threads, arch)


def main():
    out = Path(sys.argv[1])
    from cuda.core import Stream
    info, bufs, words, layer_bytes = setup()
    res = {"kernels": KERNELS, "layers": LAYERS, "layer_bytes": layer_bytes, "modes": {m: [] for m in MODES}}
    with Builder() as b:
        ks = {(pdl, p, t, e, th): LoadedKernel(spec(p, t, e, th, info.arch), b, pdl=pdl)
              for pdl, p, t, e in MODES.values() for th in {k[3] for k in KERNELS}}

        def chain_of(mode):
            pdl, p, t, e = MODES[mode]

            def chain():
                s = Stream.from_handle(torch.cuda.current_stream().cuda_stream)
                n = 0
                for layer in range(LAYERS):
                    for (_, _, g, th), buf in zip(KERNELS, bufs[layer]):
                        ks[(pdl, p, t, e, th)].launch(s, (g, 1, 1), ptr(buf), np.int64(buf.numel() // 16),
                                                      ptr(words[n]), ptr(words[n + 1]))
                        n += 1
            return chain

        copy = [copy_bandwidth_gbps(torch)]
        for rnd in range(2):
            for mode in (list(MODES) if rnd == 0 else list(MODES)[::-1]):
                us, rng = timed(chain_of(mode))
                res["modes"][mode].append({"us_a_layer": us, "range": rng})
                print(f"round {rnd}  {mode:24s} {us:7.2f} us a layer ({rng[0]:.2f}-{rng[1]:.2f})", flush=True)
            copy.append(copy_bandwidth_gbps(torch))
    write(res, copy, layer_bytes, out / "pdl-trigger.json")


if __name__ == "__main__":
    main()
