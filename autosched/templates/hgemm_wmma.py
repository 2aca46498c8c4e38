"""The tensor-core seed's GEMM (kernels/hgemm_wmma.cuh): warp-level wmma m16n16k16 fragments loaded
from shared staging, with the block tile, the warp tile, the K slice, the depth of the cp.async
ring (1: no double buffering) and the shared-row padding as knobs.  It serves every layout of the
hgemm workload (nn, nt, tn, tt through the fragments' .row/.col layouts, and the seed's blocked bb)
in FP16 and BF16; the layout and dtype are the workload's, not knobs.
"""

from __future__ import annotations

from autosched.space import Constraint, Knob, Space
from autosched.templates.base import ArgSpec, KernelSpec, Template, default_and_random, distinct, kernel_source
from autosched.templates.gemm_tiles import block_tile_rules, threads, tile_use, warp_register_rule
from autosched.workloads.base import WorkloadError

MAX_ACC = 128          # accumulator floats a thread holds: WM*WN/32 (8 a 16 x 16 fragment)
MAX_REGS = 255
REG_OVERHEAD = 32      # addresses, loop counters and the epilogue's values beside the fragments
FRAG_REGS = 8          # an FP16 A or B fragment is 8 registers of f16x2 (BF16: 4 of b32); counted
                       # at 8 for both, so one rule serves both dtypes
SCRATCH_BYTES = 16 * 16 * 4    # a warp's FP32 16 x 16 scratch in the epilogue

_ARG_ORDER = ("BF16", "A_COL", "B_COL", "BLOCKED", "BM", "BN", "BK", "WM", "WN", "STAGES", "PAD")


def registers_needed(wm, wn) -> int:
    """A thread's accumulators (WM*WN/32 floats), the A fragments of one k step (WM/16 of them)
    and the one B fragment live beside them, plus a fixed overhead."""
    return wm * wn // 32 + FRAG_REGS * (wm // 16 + 1) + REG_OVERHEAD


def smem_bytes(bm, bn, bk, stages, pad, a_col: int = 0, b_col: int = 0, blocked: int = 0,
               wm: int = 16, wn: int = 16) -> int:
    """The cp.async ring (STAGES slices of A and B, each staged as stored, rows padded by PAD), or
    the epilogue's per-warp scratch if that is larger: it reuses the ring."""
    if blocked:
        a, b = bm * bk, bk * bn                     # whole 16 x 16 tiles, no padding
    else:
        a = bk * (bm + pad) if a_col else bm * (bk + pad)
        b = bn * (bk + pad) if b_col else bk * (bn + pad)
    return max(2 * stages * (a + b), (bm // wm) * (bn // wn) * SCRATCH_BYTES)


def _smem(cfg: dict, workload) -> int:
    return smem_bytes(cfg["bm"], cfg["bn"], cfg["bk"], cfg["stages"], cfg["pad"], workload.a_col,
                      workload.b_col, workload.blocked, cfg["wm"], cfg["wn"])


class HgemmWmmaTemplate(Template):
    family = "hgemm_wmma"
    workload_name = "hgemm"
    header = "hgemm_wmma.cuh"

    def space(self, workload, device) -> Space:
        why = self.refuses(workload)
        if why is not None:
            raise WorkloadError(f"{self.family} cannot serve {workload.key}: {why}")
        M, N = workload.M, workload.N
        a_col, b_col, blocked = workload.a_col, workload.b_col, workload.blocked
        knobs = [
            Knob("bm", (32, 64, 128, 256), "rows of D a block owns"),
            Knob("bn", (32, 64, 128, 256), "columns of D a block owns"),
            Knob("wm", (16, 32, 64, 128), "rows of D a warp owns (16-row wmma fragments)"),
            Knob("wn", (16, 32, 64, 128), "columns of D a warp owns (16-column wmma fragments)"),
            Knob("bk", (16, 32, 64), "K slice staged in shared memory"),
            Knob("stages", (1, 2, 3), "slices in the cp.async ring (1: load then multiply; 2: double buffer)"),
            # the blocked layout's 16 x 16 tiles are staged whole, rows of 16 with no room for padding
            Knob("pad", (0,) if blocked else (0, 8, 16),
                 "elements of padding per shared row (bank conflicts of wmma.load; multiples of 8 keep "
                 "the 16-byte ldm and the 32-byte fragment origins)"),
        ]
        C = Constraint
        rules = [
            *block_tile_rules(M, N, device, smallest=32, max_acc=MAX_ACC, min_threads=32),
            warp_register_rule(registers_needed, REG_OVERHEAD, MAX_REGS, device),
            C(f"shared memory <= {device.smem_per_block_optin} B a block (opted in at launch over "
              f"{device.smem_per_block})", ("bm", "bn", "wm", "wn", "bk", "stages", "pad"),
              lambda bm, bn, wm, wn, bk, st, pad: smem_bytes(bm, bn, bk, st, pad, a_col, b_col, blocked, wm, wn)
              <= device.smem_per_block_optin),
        ]
        return Space(knobs, rules)

    def derived_features(self, config: dict, params: dict, device) -> dict[str, float]:
        """Blocks, waves and blocks an SM holds (threads, shared memory), tile use in M and N, and
        MMAs per fragment load."""
        c, M, N = config, params["M"], params["N"]
        t = threads(c["bm"], c["bn"], c["wm"], c["wn"])
        smem = smem_bytes(c["bm"], c["bn"], c["bk"], c["stages"], c["pad"], params.get("a_col", 0),
                          params.get("b_col", 0), params.get("blocked", 0), c["wm"], c["wn"])
        per_sm = max(1, min(device.max_threads_per_sm // t, device.smem_per_sm // max(1, smem)))
        blocks = -(-M // c["bm"]) * -(-N // c["bn"])
        mt, nt = c["wm"] // 16, c["wn"] // 16
        return {"threads": t, "blocks": blocks, "waves": blocks / (per_sm * device.sm_count),
                "blocks_per_sm": per_sm, "smem_bytes": smem,
                **tile_use(M, N, c["bm"], c["bn"]),
                "mma_per_load": mt * nt / (mt + nt)}

    def default_config(self, workload, device) -> dict:
        """A 128 x 128 block of four 64 x 64 warps, K slices of 32 double-buffered, rows padded by 8
        (none in the blocked layout): the seed's schedule with a second buffer."""
        cfg = {"bm": 128, "bn": 128, "wm": 64, "wn": 64, "bk": 32, "stages": 2,
               "pad": 0 if workload.blocked else 8}
        return self.space(workload, device).nearest(cfg)

    def render(self, workload, config: dict, device) -> KernelSpec:
        cfg = self.space(workload, device).validate(config)
        M, N, K = workload.M, workload.N, workload.K
        values = {"BF16": workload.bf16, "A_COL": workload.a_col, "B_COL": workload.b_col,
                  "BLOCKED": workload.blocked, "BM": cfg["bm"], "BN": cfg["bn"], "BK": cfg["bk"],
                  "WM": cfg["wm"], "WN": cfg["wn"], "STAGES": cfg["stages"], "PAD": cfg["pad"]}
        expr = "hgemm_wmma<" + ", ".join(str(values[a]) for a in _ARG_ORDER) + ">"
        elem = "__nv_bfloat16" if workload.bf16 else "half"
        return KernelSpec(
            family=self.family, workload_key=workload.key, config=tuple(sorted(cfg.items())),
            source=kernel_source(self.header), name_expression=expr,
            grid=(-(-N // cfg["bn"]), -(-M // cfg["bm"]), 1),
            block=(threads(cfg["bm"], cfg["bn"], cfg["wm"], cfg["wn"]), 1, 1),
            # all of it dynamic (an extern array), opted in at launch over 48 KB
            smem_bytes=_smem(cfg, workload),
            args=(ArgSpec("A", "input", ctype=f"const {elem}*"), ArgSpec("B", "input", ctype=f"const {elem}*"),
                  ArgSpec("C", "output", ctype=f"{elem}*"), ArgSpec("M", "scalar", value=M, ctype="int"),
                  ArgSpec("N", "scalar", value=N, ctype="int"), ArgSpec("K", "scalar", value=K, ctype="int")),
            arch=device.arch)

    def sanitizer_picks(self, workload, device) -> list[dict]:
        """The smallest block tile (the most blocks on the ragged edges), the most shared memory (the
        deepest ring, or the widest epilogue scratch), the largest warp tile (the most registers), the
        largest single-buffered block, then the default and two random ones; no config twice."""
        cfgs = self.space(workload, device).enumerate()
        tile = lambda c: c["bm"] * c["bn"]  # noqa: E731
        smem = lambda c: smem_bytes(c["bm"], c["bn"], c["bk"], c["stages"], c["pad"], workload.a_col,  # noqa: E731
                                    workload.b_col, workload.blocked, c["wm"], c["wn"])
        single = [c for c in cfgs if c["stages"] == 1] or cfgs
        picks = [min(cfgs, key=tile), max(cfgs, key=smem), max(cfgs, key=lambda c: (c["wm"] * c["wn"], tile(c))),
                 max(single, key=tile)] + default_and_random(self, workload, device)
        return distinct(picks)
