"""The FP32 warptiling SGEMM family over kernels/sgemm.cuh: the transformer-kernels seed's space.

Seed knobs and ranges: BK (8 16 32 64), BM (64 128 256), BN (64 128 256), WM (32 64 128 256),
WN (32 64 128 256), WNITER (1 2 4 8), TM (4 8 16 32), TN (4 8 16 32); WMITER follows from them.
The seed's constraints are the rules below (its fixed "32 warps" is relaxed to the GPU's block
limit).  Its listed improvements are knobs: stages (double buffering), pad (conflict-free shared
layout), splitk (skinny shapes).
"""

from __future__ import annotations

from autosched.device import STATIC_SMEM_LIMIT
from autosched.space import Constraint, Knob, Space
from autosched.templates.base import ArgSpec, KernelSpec, Template, kernel_source
from autosched.templates.gemm_tiles import block_tile_rules, threads, tile_use

MAX_ACC = 128          # accumulators per thread (WM*WN/32): beyond it registers spill
MAX_STAGED = 64        # floats of a K slice a thread loads (held in registers on their way to shared)
MAX_REGS = 255         # registers a thread can address
REG_OVERHEAD = 16      # addresses, indices and loop counters beside the tile's floats

_ARG_ORDER = ("TRANS_A", "BM", "BN", "BK", "WM", "WN", "WNITER", "TM", "TN", "STAGES", "PAD", "SPLITK",
              "VEC_A", "VEC_B")


def tiles(M, N, bm, bn) -> int:
    """Blocks of one K split: the C tiles."""
    return -(-M // bm) * -(-N // bn)


def smem_bytes(bm, bn, bk, stages, pad) -> int:
    return 4 * stages * bk * (bm + pad + bn + pad)


def dynamic_smem(cfg: dict) -> int:
    """Dynamic shared memory a launch needs: 0 up to the static limit (the kernel declares a static
    array), else the whole staging buffer (the kernel switches to an extern array)."""
    b = smem_bytes(cfg["bm"], cfg["bn"], cfg["bk"], cfg["stages"], cfg["pad"])
    return 0 if b <= STATIC_SMEM_LIMIT else b


def _wmiter(wm, wn, wniter, tm, tn) -> int:
    return (wm * wn) // (32 * tm * tn * wniter)


def _thread_tiles_fit(wm, wn, wniter, tm, tn) -> bool:
    if (wm * wn) % (32 * tm * tn * wniter):
        return False
    wmiter = _wmiter(wm, wn, wniter, tm, tn)
    if wmiter < 1 or wm % wmiter or wn % wniter:
        return False
    wsubm, wsubn = wm // wmiter, wn // wniter
    return wsubm % tm == 0 and wsubn % tn == 0 and (wsubm // tm) * (wsubn // tn) == 32


def registers_needed(bm, bn, wm, wn, wniter, tm, tn, bk, stages) -> int:
    """Floats a thread keeps in registers: its accumulators, the A and B fragments of one k step,
    the next slice in flight when double buffered, plus a fixed overhead."""
    t = threads(bm, bn, wm, wn)
    wmiter = _wmiter(wm, wn, wniter, tm, tn)
    acc = tm * tn * wmiter * wniter
    frag = tm * wmiter + tn * wniter
    staged = (bm + bn) * bk // t if stages == 2 else 0
    return acc + frag + staged + REG_OVERHEAD


def _registers_fit(regs_per_block: int):
    def fits(bm, bn, wm, wn, wniter, tm, tn, bk, stages) -> bool:
        if not _thread_tiles_fit(wm, wn, wniter, tm, tn):
            return True       # the tile rule refuses it, with its own name
        budget = min(MAX_REGS, regs_per_block // threads(bm, bn, wm, wn))
        return registers_needed(bm, bn, wm, wn, wniter, tm, tn, bk, stages) <= budget
    return fits


class SgemmTemplate(Template):
    family = "sgemm"
    workload_name = "sgemm"
    header = "sgemm.cuh"

    def space(self, workload, device) -> Space:
        M, N, K = workload.M, workload.N, workload.K
        knobs = [
            Knob("bm", (64, 128, 256), "rows of C a block owns"),
            Knob("bn", (64, 128, 256), "columns of C a block owns"),
            Knob("wm", (32, 64, 128, 256), "rows of C a warp owns"),
            Knob("wn", (32, 64, 128, 256), "columns of C a warp owns"),
            Knob("wniter", (1, 2, 4, 8), "warp sub-tiles along N"),
            Knob("tm", (4, 8, 16, 32), "rows of a thread tile"),
            Knob("tn", (4, 8, 16, 32), "columns of a thread tile"),
            Knob("bk", (8, 16, 32, 64), "K slice staged in shared memory"),
            Knob("stages", (1, 2), "shared stages (2: next slice fetched while this one computes)"),
            Knob("pad", (0, 4), "floats of padding per shared row (bank conflicts)"),
            Knob("splitk", (1, 2, 4, 8, 16), "K ranges summed atomically into C"),
        ]
        C = Constraint
        rules = [
            *block_tile_rules(M, N, device, smallest=64, max_acc=MAX_ACC),
            C("(WM*WN) % (32*TM*TN*WNITER) == 0, WM % WMITER == 0, WN % WNITER == 0, and a warp "
              "sub-tile is exactly 32 thread tiles", ("wm", "wn", "wniter", "tm", "tn"), _thread_tiles_fit),
            C("slices split into whole float4s per thread: (BM*BK) and (BN*BK) % (4*threads) == 0",
              ("bm", "bn", "wm", "wn", "bk"),
              lambda bm, bn, wm, wn, bk: (bm * bk) % (4 * threads(bm, bn, wm, wn)) == 0
              and (bn * bk) % (4 * threads(bm, bn, wm, wn)) == 0),
            C(f"shared memory <= {device.smem_per_block_optin} B a block (over {device.smem_per_block}: "
              "dynamic, opted in at launch)", ("bm", "bn", "bk", "stages", "pad"),
              lambda bm, bn, bk, st, pad: smem_bytes(bm, bn, bk, st, pad) <= device.smem_per_block_optin),
            # measured on the H100 (2026-11-23): the 43 configs this rule removes all spilled (up to
            # 69x the best time, 24 s each to time); it removed none that did not
            C(f"registers: accumulators + fragments + staged slice + {REG_OVERHEAD} <= min({MAX_REGS}, "
              f"{device.regs_per_block} / threads)",
              ("bm", "bn", "wm", "wn", "wniter", "tm", "tn", "bk", "stages"), _registers_fit(device.regs_per_block)),
            # one stage too: ptxas hoists the slice's loads into registers before the shared stores.
            # Compiled for the H100 (2026-11-23), 1-stage configs loading 96 floats a thread spilled
            # in 9 of 10 samples, 80 in 2 of 5, 64 or fewer in none of 12
            C(f"a K slice a thread loads (BM+BN)*BK/threads <= {MAX_STAGED} floats (registers)",
              ("bm", "bn", "wm", "wn", "bk"),
              lambda bm, bn, wm, wn, bk: (bm + bn) * bk // threads(bm, bn, wm, wn) <= MAX_STAGED),
            C("every split gets at least one K slice", ("bk", "splitk"),
              lambda bk, sk: sk == 1 or -(-K // bk) >= sk),
            C(f"split-K only to fill the GPU: while the M x N tiles are fewer than the "
              f"{device.sm_count} SMs, and to at most 4 blocks per SM", ("bm", "bn", "splitk"),
              lambda bm, bn, sk: sk == 1 or (tiles(M, N, bm, bn) < device.sm_count
                                             and tiles(M, N, bm, bn) * sk <= 4 * device.sm_count)),
        ]
        return Space(knobs, rules)

    def derived_features(self, config: dict, params: dict, device) -> dict[str, float]:
        """What a launch of `config` on M x N x K looks like to the GPU: its blocks and waves, the
        blocks an SM can hold (threads, shared memory, estimated registers), the share of each tile
        that is inside the matrix, K per split, and FMAs per shared-memory load."""
        c, M, N, K = config, params["M"], params["N"], params["K"]
        t = threads(c["bm"], c["bn"], c["wm"], c["wn"])
        smem = smem_bytes(c["bm"], c["bn"], c["bk"], c["stages"], c["pad"])
        regs = registers_needed(c["bm"], c["bn"], c["wm"], c["wn"], c["wniter"], c["tm"], c["tn"], c["bk"], c["stages"])
        per_sm = max(1, min(device.max_threads_per_sm // t, device.smem_per_sm // max(1, smem),
                            device.regs_per_block // max(1, min(MAX_REGS, regs) * t)))
        blocks = tiles(M, N, c["bm"], c["bn"]) * c["splitk"]
        wmiter = _wmiter(c["wm"], c["wn"], c["wniter"], c["tm"], c["tn"])
        frag = c["tm"] * wmiter + c["tn"] * c["wniter"]
        return {"threads": t, "blocks": blocks, "waves": blocks / (per_sm * device.sm_count),
                "blocks_per_sm": per_sm, "smem_bytes": smem, "regs_est": regs,
                **tile_use(M, N, c["bm"], c["bn"]),
                "k_per_split": -(-K // c["splitk"]), "fma_per_load": c["tm"] * c["tn"] * wmiter * c["wniter"] / frag}

    def default_config(self, workload, device) -> dict:
        """The seed's default (BM=BN=128, BK=8, TM=TN=8) with 64x64 warps: one stage, no padding,
        no split, as the seed ran it before its listed improvements."""
        cfg = {"bm": 128, "bn": 128, "wm": 64, "wn": 64, "wniter": 2, "tm": 8, "tn": 8, "bk": 8,
               "stages": 1, "pad": 0, "splitk": 1}
        return self.space(workload, device).nearest(cfg)

    def render(self, workload, config: dict, device) -> KernelSpec:
        cfg = self.space(workload, device).validate(config)
        M, N, K = workload.M, workload.N, workload.K
        rows_a = M if workload.trans_a else K      # length of a stored row of A
        values = {"TRANS_A": workload.trans_a, "BM": cfg["bm"], "BN": cfg["bn"], "BK": cfg["bk"],
                  "WM": cfg["wm"], "WN": cfg["wn"], "WNITER": cfg["wniter"], "TM": cfg["tm"],
                  "TN": cfg["tn"], "STAGES": cfg["stages"], "PAD": cfg["pad"], "SPLITK": cfg["splitk"],
                  # float4 loads only where every row starts 16-byte aligned
                  "VEC_A": 4 if rows_a % 4 == 0 else 1, "VEC_B": 4 if N % 4 == 0 else 1}
        expr = "sgemm<" + ", ".join(str(values[a]) for a in _ARG_ORDER) + ">"
        grid = (-(-N // cfg["bn"]), -(-M // cfg["bm"]), cfg["splitk"])
        return KernelSpec(
            family=self.family, workload_key=workload.key, config=tuple(sorted(cfg.items())),
            source=kernel_source(self.header), name_expression=expr, grid=grid,
            block=(threads(cfg["bm"], cfg["bn"], cfg["wm"], cfg["wn"]), 1, 1), smem_bytes=dynamic_smem(cfg),
            args=(ArgSpec("A", "input", ctype="const float*"), ArgSpec("B", "input", ctype="const float*"),
                  ArgSpec("C", "output", ctype="float*"), ArgSpec("M", "scalar", value=M, ctype="int"),
                  ArgSpec("N", "scalar", value=N, ctype="int"), ArgSpec("K", "scalar", value=K, ctype="int")),
            arch=device.arch, output_init="zero" if cfg["splitk"] > 1 else "nan")
