"""What the block-and-warp-tiled GEMM templates (sgemm, hgemm_mma, hgemm_wmma, hgemm_dyn) share: a block owns
BM x BN of C and is cut into warps of WM x WN (hgemm_wgmma shares the tile use)."""

from __future__ import annotations

from autosched.device import MAX_GRID
from autosched.space import Constraint


def threads(bm, bn, wm, wn) -> int:
    return (bm // wm) * (bn // wn) * 32


def block_tile_rules(M: int, N: int, device, smallest: int, max_acc: int, min_threads: int = 32) -> list:
    """The rules on bm, bn, wm, wn every such template has: no block taller or wider than the
    smallest one that covers the matrix (`smallest`: the least BM and BN), warp tiles that divide
    the block tile, a block of `min_threads` to the GPU's maximum, and at most `max_acc`
    accumulators a thread."""
    C = Constraint
    return [
        # a tile twice the size that covers the matrix only adds idle threads (M = 1 in decode)
        C("BM no larger than the smallest block height that covers M", ("bm",),
          lambda bm: bm == smallest or bm // 2 < M),
        C("BN no larger than the smallest block width that covers N", ("bn",),
          lambda bn: bn == smallest or bn // 2 < N),
        # the kernels put M on grid.y; N goes on grid.x, whose limit no matrix under 2^31 reaches
        C(f"grid.y = ceil(M/BM) <= {MAX_GRID[1]} blocks", ("bm",), lambda bm: -(-M // bm) <= MAX_GRID[1]),
        C("BM % WM == 0", ("bm", "wm"), lambda bm, wm: bm % wm == 0),
        C("BN % WN == 0", ("bn", "wn"), lambda bn, wn: bn % wn == 0),
        C(f"threads (BM/WM)*(BN/WN)*32 between {min_threads} and {device.max_threads_per_block}",
          ("bm", "bn", "wm", "wn"),
          lambda bm, bn, wm, wn: min_threads <= threads(bm, bn, wm, wn) <= device.max_threads_per_block),
        C(f"accumulators WM*WN/32 <= {max_acc} a thread", ("wm", "wn"), lambda wm, wn: wm * wn // 32 <= max_acc),
    ]


def warp_register_rule(registers_needed, overhead: int, max_regs: int, device) -> Constraint:
    """A thread's registers, `registers_needed(wm, wn)` (accumulators, one k step's fragments and
    `overhead`), within the per-thread cap and the block's share of the register file."""
    return Constraint(
        f"registers: accumulators + fragments + {overhead} <= min({max_regs}, {device.regs_per_block} / threads)",
        ("bm", "bn", "wm", "wn"),
        lambda bm, bn, wm, wn: registers_needed(wm, wn)
        <= min(max_regs, device.regs_per_block // threads(bm, bn, wm, wn)))


def tile_use(M: int, N: int, bm: int, bn: int) -> dict[str, float]:
    """The share of the block tiles covering M x N that lies inside the matrix, in M and in N."""
    return {"m_used": M / (-(-M // bm) * bm), "n_used": N / (-(-N // bn) * bn)}
