"""The FP16/BF16 tensor-core GEMM (kernels/hgemm_mma.cuh): warp-level mma.sync m16n8k16 fed by
ldmatrix, the instructions behind the tensor-core seed's wmma 16x16x16, with the block and warp
tiles, the K slice, the depth of the cp.async ring and the shared-row padding as knobs.  How A and B
are stored (nn, nt, tn, tt) and the dtype are the workload's, not knobs.
"""

from __future__ import annotations

from autosched.space import Constraint, Knob, Space
from autosched.templates.base import ArgSpec, KernelSpec, Template, default_and_random, kernel_source
from autosched.templates.gemm_tiles import block_tile_rules, threads, tile_use, warp_register_rule
from autosched.workloads.base import WorkloadError

MAX_ACC = 128          # accumulator floats a thread holds: WM*WN/32
MAX_REGS = 255
REG_OVERHEAD = 32      # addresses, loop counters and ldmatrix temporaries beside the tiles

_ARG_ORDER = ("B_COL", "BM", "BN", "BK", "WM", "WN", "STAGES", "PAD")
_LATER_ARGS = ("A_COL", "BF16")    # defaulted to 0 in the kernel: written only when one is not


def registers_needed(wm, wn) -> int:
    """A thread's accumulators (WM*WN/32 floats) and one k step's fragments (4 registers a 16-row
    A tile, 2 an 8-column B tile), plus a fixed overhead."""
    return wm * wn // 32 + 4 * (wm // 16) + 2 * (wn // 8) + REG_OVERHEAD


def smem_bytes(bm, bn, bk, stages, pad, b_col: int, a_col: int = 0) -> int:
    """The cp.async ring: STAGES slices of A and B, each staged as stored with rows padded, in
    2-byte elements."""
    a = bk * (bm + pad) if a_col else bm * (bk + pad)
    return 2 * stages * (a + (bn * (bk + pad) if b_col else bk * (bn + pad)))


class HgemmMmaTemplate(Template):
    family = "hgemm_mma"
    workload_name = "hgemm"
    header = "hgemm_mma.cuh"

    def refuses(self, workload) -> str | None:
        """The kernel reads FP16 or BF16 in the four row layouts (nn, nt, tn, tt).  It refuses the
        blocked layout: its ldmatrix row addresses walk rows of the stored matrix, which in bb
        are 16 long and jump between tiles; the wmma template serves bb."""
        why = super().refuses(workload)
        if why is not None:
            return why
        if workload.blocked:
            return "its kernel reads row layouts, not the blocked 16x16 tiles (bb; hgemm_wmma serves them)"
        return None

    def space(self, workload, device) -> Space:
        why = self.refuses(workload)
        if why is not None:     # its renders would read the operands as another layout: wrong results
            raise WorkloadError(f"{self.family} cannot serve {workload.key}: {why}")
        return self._space(workload, device)

    def _space(self, workload, device) -> Space:
        M, N, b_col, a_col = workload.M, workload.N, workload.b_col, workload.a_col
        knobs = [
            Knob("bm", (32, 64, 128, 256), "rows of C a block owns"),
            Knob("bn", (32, 64, 128, 256), "columns of C a block owns"),
            Knob("wm", (16, 32, 64, 128), "rows of C a warp owns (16-row MMA tiles)"),
            Knob("wn", (16, 32, 64, 128), "columns of C a warp owns (pairs of 8-column MMA tiles)"),
            Knob("bk", (16, 32, 64), "K slice staged in shared memory"),
            Knob("stages", (2, 3, 4), "slices in the cp.async ring (STAGES-1 in flight)"),
            Knob("pad", (0, 8), "halves of padding per shared row (bank conflicts of ldmatrix)"),
        ]
        C = Constraint
        rules = [
            *block_tile_rules(M, N, device, smallest=32, max_acc=MAX_ACC, min_threads=64),
            # compiled for the H100 (2026-11-23): 1024-thread blocks (64 registers a thread) of 16 x 64
            # warps and a 512-thread block of 128 x 16 warps spilled; this rule refuses both
            warp_register_rule(registers_needed, REG_OVERHEAD, MAX_REGS, device),
            C(f"shared memory <= {device.smem_per_block_optin} B a block (opted in at launch over "
              f"{device.smem_per_block})", ("bm", "bn", "bk", "stages", "pad"),
              lambda bm, bn, bk, st, pad: smem_bytes(bm, bn, bk, st, pad, b_col, a_col)
              <= device.smem_per_block_optin),
        ]
        return Space(knobs, rules)

    def derived_features(self, config: dict, params: dict, device) -> dict[str, float]:
        """Blocks, waves and blocks an SM holds (threads, shared memory), tile use in M and N, and
        MMAs per fragment load."""
        c, M, N = config, params["M"], params["N"]
        t = threads(c["bm"], c["bn"], c["wm"], c["wn"])
        smem = smem_bytes(c["bm"], c["bn"], c["bk"], c["stages"], c["pad"], params.get("b_col", 0),
                          params.get("a_col", 0))
        per_sm = max(1, min(device.max_threads_per_sm // t, device.smem_per_sm // max(1, smem)))
        blocks = -(-M // c["bm"]) * -(-N // c["bn"])
        mt, nt = c["wm"] // 16, c["wn"] // 8
        return {"threads": t, "blocks": blocks, "waves": blocks / (per_sm * device.sm_count),
                "blocks_per_sm": per_sm, "smem_bytes": smem,
                **tile_use(M, N, c["bm"], c["bn"]),
                "mma_per_ldmatrix": mt * nt / (mt + nt / 2)}

    def default_config(self, workload, device) -> dict:
        """A 128 x 128 block of four 64 x 64 warps, K slices of 32 in a 3-deep ring, padded rows:
        the usual first tensor-core kernel, before any tuning."""
        cfg = {"bm": 128, "bn": 128, "wm": 64, "wn": 64, "bk": 32, "stages": 3, "pad": 8}
        return self.space(workload, device).nearest(cfg)

    def render(self, workload, config: dict, device) -> KernelSpec:
        cfg = self.space(workload, device).validate(config)
        M, N, K = workload.M, workload.N, workload.K
        values = {"B_COL": workload.b_col, "BM": cfg["bm"], "BN": cfg["bn"], "BK": cfg["bk"], "WM": cfg["wm"],
                  "WN": cfg["wn"], "STAGES": cfg["stages"], "PAD": cfg["pad"],
                  "A_COL": workload.a_col, "BF16": workload.bf16}
        args = _ARG_ORDER + (_LATER_ARGS if workload.a_col or workload.bf16 else ())
        expr = "hgemm_mma<" + ", ".join(str(values[a]) for a in args) + ">"
        elem = "__nv_bfloat16" if workload.bf16 else "half"
        return KernelSpec(
            family=self.family, workload_key=workload.key, config=tuple(sorted(cfg.items())),
            source=kernel_source(self.header), name_expression=expr,
            grid=(-(-N // cfg["bn"]), -(-M // cfg["bm"]), 1),
            block=(threads(cfg["bm"], cfg["bn"], cfg["wm"], cfg["wn"]), 1, 1),
            # all of it dynamic (an extern array), opted in at launch over 48 KB
            smem_bytes=smem_bytes(cfg["bm"], cfg["bn"], cfg["bk"], cfg["stages"], cfg["pad"], workload.b_col,
                                  workload.a_col),
            args=(ArgSpec("A", "input", ctype=f"const {elem}*"), ArgSpec("B", "input", ctype=f"const {elem}*"),
                  ArgSpec("C", "output", ctype=f"{elem}*"), ArgSpec("M", "scalar", value=M, ctype="int"),
                  ArgSpec("N", "scalar", value=N, ctype="int"), ArgSpec("K", "scalar", value=K, ctype="int")),
            arch=device.arch)

    def sanitizer_picks(self, workload, device) -> list[dict]:
        """The most shared memory, the largest and the smallest block tile, then the default and two random ones."""
        cfgs = self.space(workload, device).enumerate()
        tile = lambda c: c["bm"] * c["bn"]  # noqa: E731
        return [max(cfgs, key=lambda c: smem_bytes(c["bm"], c["bn"], c["bk"], c["stages"], c["pad"], workload.b_col,
                                                   workload.a_col)),
                max(cfgs, key=tile), min(cfgs, key=tile)] + default_and_random(self, workload, device)
