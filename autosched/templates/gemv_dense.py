"""The dense fp16 GEMV family: gemv_dense of kernels/decode.cuh as a search space (workload gemv_dense).

Knobs:
  warps    rows (one warp each) a block takes: 1, 2, 4, 8, 16
  unroll   16-byte weight loads in flight per lane in row_dot (any UNROLL >= 1 compiles: the loop
           keeps a remainder; 1..8, since 8 already holds 32 registers of loads a thread)

The kernel's own rules, in Python: a block of at most the device's threads; a row-pairing epilogue
(norm_swiglu: the engine's gate/up) needs an even warp count (its static_assert), which the plain
GEMV tuned here does not, so the engine filters its candidates with `blocks_pair_rows`.  The
default is what the engine always launched: 4 warps, unroll 4, at every shape.
"""

from __future__ import annotations

from autosched.space import Constraint, Knob, Space
from autosched.templates.base import ArgSpec, KernelSpec, Template, kernel_source
from autosched.templates.decode import HEADER, gemv_dense_spec

WARPS = (1, 2, 4, 8, 16)
UNROLLS = (1, 2, 4, 8)
DEFAULT = {"warps": 4, "unroll": 4}     # the engine's fixed choice before this family existed


def blocks_pair_rows(workload, config: dict) -> bool:
    """Does every block own whole (gate, up) row pairs, as the norm_swiglu epilogue needs?"""
    return config["warps"] % 2 == 0 and workload.N % 2 == 0


class GemvDenseTemplate(Template):
    family = "gemv_dense"
    workload_name = "gemv_dense"
    header = HEADER

    def space(self, workload, device) -> Space:
        knobs = [Knob("warps", WARPS, "rows (a warp each) per block"),
                 Knob("unroll", UNROLLS, "16-byte weight loads in flight per lane")]
        rules = [Constraint(f"block of at most {device.max_threads_per_block} threads", ("warps",),
                            lambda w: 32 * w <= device.max_threads_per_block)]
        return Space(knobs, rules)

    def default_config(self, workload, device) -> dict:
        return dict(DEFAULT)

    def derived_features(self, config: dict, params: dict, device) -> dict[str, float]:
        N, K = params["N"], params["K"]
        blocks = -(-N // config["warps"])
        return {"blocks": blocks, "waves": blocks / device.sm_count, "threads": 32 * config["warps"],
                "k_steps": K / (8 * 32 * config["unroll"]), "block_kbytes": config["warps"] * K * 2 / 1024}

    def render(self, workload, config: dict, device) -> KernelSpec:
        cfg = self.space(workload, device).validate(config)
        base = engine_spec(workload.N, workload.K, cfg, device.arch)
        null = dict(role="scalar", dtype="u64", value=0)
        return KernelSpec(
            family=self.family, workload_key=workload.key, config=tuple(sorted(cfg.items())),
            source=kernel_source(self.header), name_expression=base.name_expression,
            grid=base.grid, block=base.block, smem_bytes=0,
            args=(ArgSpec("C", "output", ctype="__half*"),
                  ArgSpec("W", "input", ctype="const __half*"),
                  ArgSpec("scale", ctype="const __half*", **null),
                  ArgSpec("V", "input", ctype="const __half*"),
                  ArgSpec("N", "scalar", value=workload.N, ctype="int"),
                  ArgSpec("K", "scalar", value=workload.K, ctype="int"),
                  ArgSpec("res", ctype="float*", **null),
                  ArgSpec("ss_in", ctype="const double*", **null),
                  ArgSpec("ss_out", ctype="double*", **null),
                  ArgSpec("dim", "scalar", value=0, ctype="int"),
                  ArgSpec("eps", "scalar", value=0, dtype="f32", ctype="float")),
            arch=device.arch)


def engine_spec(n: int, k: int, config: dict, arch: str, epilogue: str = "store") -> KernelSpec:
    """The engine's fp16 matmul (fp16 weights, activations and output) with `config`'s warps and
    unroll and a decode step's `epilogue`: the spec the engine launched before this family existed
    when config is DEFAULT."""
    return gemv_dense_spec(n, k, "fp16", "half", "half", arch, warps=config["warps"], unroll=config["unroll"],
                           epilogue=epilogue)
