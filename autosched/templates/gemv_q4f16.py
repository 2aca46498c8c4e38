"""The q4f16_1 dequantize-GEMV family: the seed's schedule space over kernels/gemv_q4f16.cuh.

Knobs (seed names in brackets):
  tx          threadIdx.x spans the spatial axis "s" (TS) or the reduction axis "r" (TR)
  load        vector load over "n" or "k"                       [VEC_LOAD over N or K]
  compute     vector compute over "n" or "k"                    [VEC_C over N or K]
  vec_c       1: fp32 scalar compute; 2: half2 (two lanes along `compute`)
  vec_load    words (8 values each) a load moves: 1, 2, 4 (4 B .. 16 B)
  tile_s      rows a thread owns                                [TILE_S]
  tile_r      values along K a thread takes per step, multiple of 8   [TILE_R]
  ts, tr      threads along N and along K                       [TS, TR]
  layout_n, layout_k   weight tile (N, K/8) -> (N/n, K/8/k, n, k) in words  [n, k]
  v_shared    stage V in shared memory
  unroll      unroll factor of the K loop
  hint        weight-load cache policy (not in the seed; a Hopper habit for streams read once)
  prefetch    register double buffer of the weight tile (not in the seed)

The seed's four templates are (load, compute) in {n, k}^2.  Its pruning rules are constraints
below, each named as the rule it enforces; the GPU's limits come from the DeviceInfo.
"""

from __future__ import annotations

import dataclasses

from autosched.space import Constraint, Knob, Space
from autosched.templates.base import ArgSpec, KernelSpec, Template, kernel_source
from autosched.templates.epilogue import epilogue_id, pairs_rows

POW2_256 = (1, 2, 4, 8, 16, 32, 64, 128, 256)
MAX_TILE_WORDS = 32      # words of the weight tile a thread holds per step (registers)

# C++ template-argument order of gemv_q4f16<...> in kernels/gemv_q4f16.cuh
_ARG_ORDER = ("N", "K", "LOAD_K", "COMPUTE_K", "VEC_C", "TX_S", "TS", "TR", "TILE_S", "TILE_R",
              "VEC_LOAD", "LN", "LK", "V_SHARED", "UNROLL", "HINT",
              "PREFETCH")


def _pow2_floor(x: int) -> int:
    return 1 << (x.bit_length() - 1) if x >= 1 else 0


def _r_in_warp(tx: str, ts: int, tr: int) -> int:
    """Reduction-axis threads that share one warp (mirrors R_IN_WARP in the .cuh)."""
    if tx == "s":
        return 1 if ts >= 32 else 32 // ts
    return min(tr, 32)


def reduction_smem_bytes(tx: str, ts: int, tr: int, tile_s: int) -> int:
    groups = tr // _r_in_warp(tx, ts, tr)
    return 0 if groups == 1 else 4 * groups * ts * tile_s


def smem_bytes(K: int, tx: str, ts: int, tr: int, tile_s: int, v_shared: int) -> int:
    return v_shared * 2 * K + reduction_smem_bytes(tx, ts, tr, tile_s)


def k_steps(K: int, tr: int, tile_r: int) -> int:
    return -(-(K // 8) // (tr * tile_r // 8))


def warp_reads_contiguous(tx, load, vec_load, tile_s, ts, tr, n, k) -> bool:
    """Do the lanes of a warp, in one load instruction, read one contiguous run of words?

    Lanes step along threadIdx.x.  In the layout (N/n, K/8/k, n, k) two words are adjacent when
    they are adjacent inside a k-run, or are the ends of k-runs of adjacent rows of one n-tile.
    """
    lanes = min(ts if tx == "s" else tr, 32)
    if tx == "r":      # lanes walk along K within one row
        if load == "k":
            # the thread's tile_s rows as one n-tile whose k-runs are one warp instruction wide:
            # the warp's tile_s loads then read one contiguous span (larger n or k only reorder
            # other warps' data, which no access of this warp sees)
            return n == tile_s and (n == 1 or k == lanes * vec_load)
        # each lane reads vec_load rows of one word column: adjacent lanes are n words apart
        return n == vec_load and k == 1
    # lanes walk along N
    if load == "n":    # each lane reads vec_load rows (k == 1): the warp's rows share an n-tile
        return k == 1 and n % (lanes * vec_load) == 0
    # each lane reads vec_load words of its own row: adjacent rows' runs abut when k == vec_load
    return k == vec_load and n % lanes == 0


class GemvQ4F16Template(Template):
    family = "gemv_q4f16"
    workload_name = "gemv_q4f16"
    header = "gemv_q4f16.cuh"

    def refuses(self, workload) -> str | None:
        other = super().refuses(workload)
        if other:
            return other
        # a block is whole warps and no thread may idle: ts <= N rows and tr <= K/8 words, both
        # powers of two, must make 32 threads; below that the space is empty and no config exists
        if _pow2_floor(workload.N) * _pow2_floor(workload.K // 8) < 32:
            return (f"{self.family} needs a warp of threads with work: the largest powers of two in N and "
                    f"K/8 must multiply to at least 32, not so for N={workload.N}, K={workload.K}")
        return None

    def space(self, workload, device) -> Space:
        N, K = workload.N, workload.K
        KW = K // 8
        knobs = [
            Knob("tx", ("r", "s"), "threadIdx.x over the reduction (r) or spatial (s) axis"),
            Knob("load", ("k", "n"), "axis of the vector load"),
            Knob("compute", ("k", "n"), "axis of the vector compute"),
            Knob("vec_c", (1, 2), "compute vector width: 1 fp32, 2 half2"),
            Knob("vec_load", (1, 2, 4), "words per vector load"),
            Knob("tile_s", (1, 2, 4, 8), "rows per thread"),
            Knob("tile_r", (8, 16, 32, 64, 128), "K values per thread per step"),
            Knob("ts", POW2_256, "threads over N"),
            Knob("tr", POW2_256, "threads over K"),
            Knob("layout_n", (1, 2, 4, 8, 16, 32, 64), "rows in a weight tile"),
            Knob("layout_k", (1, 2, 4, 8, 16, 32), "words in a weight tile"),
            Knob("v_shared", (0, 1), "V staged in shared memory"),
            Knob("unroll", (1, 4, 16), "unroll factor of the K loop"),
            Knob("hint", (0, 1), "weight loads: 0 plain read-only, 1 skip L1 + L2 256-byte prefetch"),
            Knob("prefetch", (0, 1), "1: next step's weights loaded before this step computes"),
        ]
        C = Constraint
        rules = [
            C("fp32 scalar compute has no vector axis (vec_c=1 only with compute=k)",
              ("compute", "vec_c"), lambda c, vc: vc == 2 or c == "k"),
            C("coalescing: threadIdx.x along the load axis -> tile = one vector "
              "(tile_s == vec_load over N, tile_r == 8*vec_load over K); across it -> tile of "
              "threadIdx.x's axis is 1 (tile_s == 1, tile_r == 8)",
              ("tx", "load", "vec_load", "tile_s", "tile_r"),
              lambda tx, ld, vl, s, r: (s == vl if ld == "n" else s == 1) if tx == "s"
              else (r == 8 * vl if ld == "k" else r == 8)),
            C("a vector load fits in the thread tile",
              ("load", "vec_load", "tile_s", "tile_r"),
              lambda ld, vl, s, r: (r // 8) % vl == 0 if ld == "k" else s % vl == 0),
            C("half2 over N pairs rows: tile_s even", ("compute", "vec_c", "tile_s"),
              lambda c, vc, s: not (c == "n" and vc == 2) or s % 2 == 0),
            C(f"weight tile of a thread <= {MAX_TILE_WORDS} words (registers)", ("tile_s", "tile_r"),
              lambda s, r: s * r // 8 <= MAX_TILE_WORDS),
            C(f"prefetch holds two tiles: 2 x tile <= {MAX_TILE_WORDS} words", ("tile_s", "tile_r", "prefetch"),
              lambda s, r, p: s * r // 8 * (1 + p) <= MAX_TILE_WORDS),
            C(f"block size a multiple of {device.warp_size}, at most {device.max_threads_per_block}",
              ("ts", "tr"), lambda ts, tr: ts * tr % device.warp_size == 0
              and ts * tr <= device.max_threads_per_block),
            C("no idle threads: ts*tile_s <= N and tr*tile_r <= K", ("tile_s", "tile_r", "ts", "tr"),
              lambda s, r, ts, tr: ts * s <= N and tr * r <= K),
            C("layout: N % n == 0 and TILE_S <= n", ("tile_s", "layout_n"),
              lambda s, n: N % n == 0 and s <= n),
            C("layout: K/8 % k == 0, and k == 1 when n == 1 (same layout)", ("layout_n", "layout_k"),
              lambda n, k: KW % k == 0 and (n > 1 or k == 1)),
            C("vec_load=1 has no load axis (load=k only)", ("load", "vec_load"),
              lambda ld, vl: vl > 1 or ld == "k"),
            C("vector load stays in one contiguous run of the layout "
              "(over K: n == 1 or vec_load | k; over N: vec_load | n and k == 1)",
              ("load", "vec_load", "layout_n", "layout_k"),
              lambda ld, vl, n, k: (n == 1 or k % vl == 0) if ld == "k"
              else (n % vl == 0 and (k == 1 or vl == 1))),
            C("coalescing in the layout: the words one load instruction of a warp reads are "
              "contiguous (the seed's coalescing rule applied to n and k)",
              ("tx", "load", "vec_load", "tile_s", "ts", "tr", "layout_n", "layout_k"),
              warp_reads_contiguous),
            C("layout tile within one block's reads: n <= ts*tile_s, k <= tr*tile_r/8 (a larger "
              "tile changes no access a block makes)",
              ("tile_s", "tile_r", "ts", "tr", "layout_n", "layout_k"),
              lambda s, r, ts, tr, n, k: n <= ts * s and k <= tr * r // 8),
            C(f"shared memory <= {device.smem_per_block} B per block",
              ("tx", "tile_s", "ts", "tr", "v_shared"),
              lambda tx, s, ts, tr, vs: smem_bytes(K, tx, ts, tr, s, vs) <= device.smem_per_block),
            C("unroll <= number of K steps", ("tile_r", "tr", "unroll"),
              lambda r, tr, u: u <= k_steps(K, tr, r)),
        ]
        return Space(knobs, rules)

    def default_config(self, workload, device) -> dict:
        """The rule a user gets without tuning (in the spirit of TVM dlight's GEMV rule): a warp
        per row along K with 16-byte loads, half2 compute, 4 rows per block."""
        N, K = workload.N, workload.K
        space = self.space(workload, device)
        vec = 4 if (K // 8) % 4 == 0 else 1
        tr = 32
        while tr > 1 and tr * 8 * vec > K:
            tr //= 2
        ts = max(1, 128 // tr)
        while ts > 1 and ts > N:
            ts //= 2
        steps = k_steps(K, tr, 8 * vec)
        cfg = {"tx": "r", "load": "k", "compute": "k", "vec_c": 2, "vec_load": vec, "tile_s": 1,
               "tile_r": 8 * vec, "ts": ts, "tr": tr, "layout_n": 1, "layout_k": 1, "v_shared": 0,
               "unroll": max(u for u in space.knob("unroll").values if u <= max(1, min(steps, 4))),
               "hint": 0, "prefetch": 0}
        # tiny shapes can break the rule's block size: then the valid config closest to it
        return space.nearest(cfg)

    def derived_features(self, config: dict, params: dict, device) -> dict[str, float]:
        """What the GPU sees of a config on a shape (N, K): blocks and waves over the SMs, threads
        and rows of a block, its K steps and the weight bytes it streams.  These carry a config's
        merit from shape to shape, where knobs alone say nothing of how it fills the machine."""
        N, K = params["N"], params["K"]
        rows = config["ts"] * config["tile_s"]
        blocks = -(-N // rows)
        return {"blocks": blocks, "waves": blocks / device.sm_count, "threads": config["ts"] * config["tr"],
                "rows_per_block": rows, "k_steps": K / (config["tr"] * config["tile_r"]),
                "block_kbytes": rows * K / 2 / 1024}

    def render(self, workload, config: dict, device) -> KernelSpec:
        cfg = self.space(workload, device).validate(config)
        N, K = workload.N, workload.K
        values = {
            "N": N, "K": K, "LOAD_K": int(cfg["load"] == "k"), "COMPUTE_K": int(cfg["compute"] == "k"),
            "VEC_C": cfg["vec_c"], "TX_S": int(cfg["tx"] == "s"), "TS": cfg["ts"], "TR": cfg["tr"],
            "TILE_S": cfg["tile_s"], "TILE_R": cfg["tile_r"], "VEC_LOAD": cfg["vec_load"],
            "LN": cfg["layout_n"], "LK": cfg["layout_k"], "V_SHARED": cfg["v_shared"],
            "UNROLL": cfg["unroll"], "HINT": cfg["hint"], "PREFETCH": cfg["prefetch"],
        }
        expr = "gemv_q4f16<" + ", ".join(str(values[a]) for a in _ARG_ORDER) + ">"
        rows = cfg["ts"] * cfg["tile_s"]
        block = (cfg["ts"], cfg["tr"], 1) if cfg["tx"] == "s" else (cfg["tr"], cfg["ts"], 1)
        nibbles = "natural" if cfg["vec_c"] == 1 else ("k" if cfg["compute"] == "k" else "rows")
        n, k = cfg["layout_n"], cfg["layout_k"]
        return KernelSpec(
            family=self.family,
            workload_key=workload.key,
            config=tuple(sorted(cfg.items())),
            source=kernel_source(self.header),
            name_expression=expr,
            grid=(-(-N // rows), 1, 1),
            block=block,
            smem_bytes=smem_bytes(K, cfg["tx"], cfg["ts"], cfg["tr"], cfg["tile_s"], cfg["v_shared"]),
            args=(
                ArgSpec("A_q", "input", "q4_words", (("k", k), ("n", n), ("nibbles", nibbles)),
                        ctype="const u32*"),
                ArgSpec("A_scale", "input", "q4_scales", (("n", n),), ctype="const half*"),
                ArgSpec("V", "input", ctype="const half*"),
                ArgSpec("C", "output", ctype="half*"),
            ),
            arch=device.arch,
        )


def fused_smem_bytes(K: int, tx: str, ts: int, tr: int, tile_s: int, v_shared: int) -> int:
    """Shared memory of gemv_q4f16_fused: the staged row sums need at least a float a row."""
    groups = max(1, tr // _r_in_warp(tx, ts, tr))
    return v_shared * 2 * K + 4 * groups * ts * tile_s


def blocks_pair_rows(workload, config: dict) -> bool:
    """Does every block own whole (gate, up) row pairs, as a row-pairing epilogue needs?"""
    return config["ts"] * config["tile_s"] % 2 == 0 and workload.N % 2 == 0


def fused_spec(workload, config: dict, device, epilogue: str) -> KernelSpec:
    """gemv_q4f16_fused: the config's GEMV with a decode step's `epilogue` (templates/epilogue.py);
    the launcher appends the epilogue's five arguments to the GEMV's four."""
    spec = GemvQ4F16Template().render(workload, config, device)
    cfg = dict(spec.config)
    if pairs_rows(epilogue) and not blocks_pair_rows(workload, cfg):
        raise ValueError(f"the {epilogue} epilogue pairs rows: a block's rows ({cfg['ts']} x {cfg['tile_s']}) "
                         f"and N ({workload.N}) must be even")
    expr = "gemv_q4f16_fused<" + spec.name_expression.split("<", 1)[1][:-1] + f", {epilogue_id(epilogue)}>"
    return dataclasses.replace(spec, name_expression=expr, smem_bytes=fused_smem_bytes(
        workload.K, cfg["tx"], cfg["ts"], cfg["tr"], cfg["tile_s"], cfg["v_shared"]))


def family_of(cfg: dict) -> tuple:
    """The seed's template (load axis, compute axis) with the compute width and tx binding."""
    return (cfg["tx"], cfg["load"], cfg["compute"], cfg["vec_c"])


def extreme_configs(configs: list[dict]) -> list[dict]:
    """Corner configs of every template family: fewest and most threads, largest thread tile,
    largest layout tile, deepest unroll, with V in shared memory and the load hint on where
    possible.  These are the configs a sanitizer run should see."""
    fams: dict[tuple, list[dict]] = {}
    for c in configs:
        fams.setdefault(family_of(c), []).append(c)
    keys = [
        lambda c: c["ts"] * c["tr"],
        lambda c: -c["ts"] * c["tr"],
        lambda c: (c["tile_s"] * c["tile_r"], c["unroll"], c["v_shared"], c["hint"]),
        lambda c: (c["layout_n"] * c["layout_k"], c["vec_load"], c["v_shared"]),
        lambda c: (c["unroll"], c["tr"], c["hint"], -c["v_shared"]),
        lambda c: (c["prefetch"], c["v_shared"], c["tile_s"] * c["tile_r"], -c["ts"] * c["tr"]),
    ]
    out, seen = [], set()
    for fam in sorted(fams):
        for key in keys:
            c = max(fams[fam], key=key)
            h = tuple(sorted(c.items()))
            if h not in seen:
                seen.add(h)
                out.append(c)
    return out
