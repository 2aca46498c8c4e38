"""The weight-streaming GEMM for few rows (kernels/hgemm_stream.cuh): C (M, N) = A (M, K) . W^T with W
stored (N, K), M <= 256 (a prefill chunk, a batch of decode tokens).  Each CTA streams BN rows of W
and a K slice through a cp.async ring; mma.sync m16n8k16 takes W as its 16-row operand and A's rows
as its 8 columns, so M = 8 fills an MMA.  Split-K slices sum through a workspace (the last one to
arrive stores C), as hgemm_wgmma_splitk's do.

Knobs: the W rows a warp owns (16 x rw), the warps along N (wn) and along K (wk), the rows of A a
CTA takes (mt), the k a warp takes from each ring slot (kw), the ring depth and the K slices.
BN = 16 x rw x wn rows of W a CTA; a slot holds kw x wk of K.

It serves the linear layer's layout only (nt: A row-major, B stored (N, K)) and refuses M > 256:
there W is read again for every 128 rows of A, where the tiled templates reuse it from shared memory.

HgemmStreamDynTemplate is the same kernel as a dynamic-M micro-kernel (autosched.dynamic,
ops.HgemmDispatch): M is a run-time argument and nothing in the binary depends on it, so its space
reads no M and it refuses none; where it is slow (large M) is the cost model's to predict from its
probes.  With its switch off (AUTOSCHED_DYN_STREAM=0) it stays out of dynamic runs and a dispatcher
serves no artifact holding one.
"""

from __future__ import annotations

import math
import random

from autosched import knobs
from autosched.space import ConfigError, Constraint, Knob, Space
from autosched.templates import gemm_model
from autosched.templates.base import (ArgSpec, KernelSpec, MicroKernelTemplate, Template, default_and_random, distinct,
                                      kernel_source)
from autosched.templates.hgemm_dyn import blocks_per_sm
from autosched.templates.gemm_tiles import tile_use
from autosched.workloads.base import WorkloadError



def dyn_stream_enabled() -> bool:
    return knobs.DYN_STREAM.enabled()


# A dynamic run's seeds of this template (it has no default ladder): the configs tuned best at 16 and 128
# rows of 4096 x 4096 (bench/results/checks/hgemm-few-rows-stream-kpair-2026-11-24.json), each with the
# largest M it seeds.
STREAM_SEEDS = ((32, {"rw": 1, "wn": 2, "wk": 4, "mt": 16, "kw": 64, "stages": 6, "split_k": 1}),
                (128, {"rw": 1, "wn": 4, "wk": 4, "mt": 64, "kw": 32, "stages": 3, "split_k": 1}))

MAX_M = 256              # rows of A above which the template refuses the shape
MAX_ACC = 128            # accumulator floats a thread: rw x mt / 2
REG_OVERHEAD = 40        # addresses, loop counters and the split-K epilogue beside fragments
WORKSPACE_CAP = 64 << 20
COUNTER_ALIGN = 256
SPLIT_K_VALUES = (1, 2, 3, 4, 6, 8, 16)

_ARG_ORDER = ("BF16", "RW", "WN", "WK", "MT", "KW", "STAGES", "SPLIT_K")


def bn_of(rw: int, wn: int) -> int:
    return 16 * rw * wn


def threads(wn: int, wk: int) -> int:
    return 32 * wn * wk


def slot_row(ch: int) -> int:
    """Halves of one ring row: the slot's k (ch) padded so the row stride is 64 bytes past a multiple
    of 128 (HgemmStream::LD); None where no such pad exists."""
    r = (ch * 2) % 128
    return ch + 32 if r == 0 else ch if r == 64 else None


def smem_bytes(rw, wn, wk, mt, kw, stages) -> int:
    """The ring (stages slots of BN + mt rows) or, after the K loop, wk FP32 partial tiles of mt x
    (BN + 4), whichever is larger: HgemmStream::SMEM_BYTES."""
    bn, ch = bn_of(rw, wn), kw * wk
    ring = stages * (bn + mt) * slot_row(ch) * 2
    return max(ring, wk * mt * (bn + 4) * 4)


def registers_needed(rw: int, mt: int) -> int:
    """Accumulators (rw x mt / 2), the W fragments of one 32-k group (8 a 16-row block), one A
    fragment (4) and a fixed overhead."""
    return rw * mt // 2 + 8 * rw + 4 + REG_OVERHEAD


def tiles(M: int, N: int, rw: int, wn: int, mt: int) -> int:
    return -(-N // bn_of(rw, wn)) * -(-M // mt)


def workspace_bytes(M: int, N: int, rw: int, wn: int, mt: int, split_k: int) -> int:
    """A u32 counter per tile padded to 256 bytes, then split_k FP32 tiles of mt x BN per tile (the
    counters alone where split_k is 1: the kernel takes the pointer and never touches it)."""
    t = tiles(M, N, rw, wn, mt)
    counters = -(-t * 4 // COUNTER_ALIGN) * COUNTER_ALIGN
    return counters + (split_k * t * mt * bn_of(rw, wn) * 4 if split_k > 1 else 0)


class HgemmStreamTemplate(Template):
    probe_shapes = ("200x264x200_bt",)        # B transposed (the sanitizer shapes' _bt is refused)
    family = "hgemm_stream"
    workload_name = "hgemm"
    header = "hgemm_stream.cuh"

    dynamic_m = False         # True: no rule reads M (HgemmStreamDynTemplate)

    def refuses(self, workload) -> str | None:
        why = super().refuses(workload)
        if why is not None:
            return why
        if workload.layout != "nt":
            return (f"it streams a linear layer's weight: A row-major and B stored (N, K) (layout nt), "
                    f"not {workload.layout}")
        if workload.M > MAX_M and not self.dynamic_m:
            return f"M = {workload.M} > {MAX_M}: W would be streamed once per 128 rows of A"
        return None

    def space(self, workload, device) -> Space:
        why = self.refuses(workload)
        if why is not None:
            raise WorkloadError(f"{self.family} cannot serve {workload.key}: {why}")
        M, N, K, sms = workload.M, workload.N, workload.K, device.sm_count
        knobs = [
            Knob("rw", (1, 2), "16-row blocks of W a warp owns"),
            Knob("wn", (1, 2, 4, 8), "warps along N (BN = 16 x rw x wn rows of W a CTA)"),
            Knob("wk", (1, 2, 4), "warps along K, each its own k of every ring slot"),
            Knob("mt", (8, 16, 32, 64, 128), "rows of A a CTA takes (8-row MMA tiles)"),
            Knob("kw", (32, 64, 128), "k a warp takes from each ring slot"),
            Knob("stages", (2, 3, 4, 6, 8), "slots of the cp.async ring (stages - 1 in flight)"),
            Knob("split_k", SPLIT_K_VALUES, "K slices of a tile, summed by the slice that arrives last"),
        ]
        C = Constraint
        cap = device.smem_per_block_optin
        # the dynamic template's space reads no M: its workspace cap is taken at MAX_M rows
        Mw = MAX_M if self.dynamic_m else M
        rules = [
            C("threads 32 x wn x wk between 64 and 512", ("wn", "wk"), lambda wn, wk: 64 <= threads(wn, wk) <= 512),
            C("BN = 16 x rw x wn no larger than the smallest that covers N", ("rw", "wn"),
              lambda rw, wn: bn_of(rw, wn) == 16 or bn_of(rw, wn) // 2 < N),
            C(f"accumulators rw x mt / 2 <= {MAX_ACC} a thread", ("rw", "mt"), lambda rw, mt: rw * mt // 2 <= MAX_ACC),
            C(f"registers: accumulators + fragments + {REG_OVERHEAD} <= min(255, {device.regs_per_block} / threads)",
              ("rw", "wn", "wk", "mt"),
              lambda rw, wn, wk, mt: registers_needed(rw, mt) <= min(255, device.regs_per_block // threads(wn, wk))),
            C(f"shared memory <= {cap} B a block", ("rw", "wn", "wk", "mt", "kw", "stages"),
              lambda rw, wn, wk, mt, kw, st: smem_bytes(rw, wn, wk, mt, kw, st) <= cap),
            C("every K slice holds at least one ring slot: ceil(K / (kw x wk)) >= split_k", ("wk", "kw", "split_k"),
              lambda wk, kw, sk: -(-K // (kw * wk)) >= sk),
            C(f"workspace <= {WORKSPACE_CAP >> 20} MiB" + (f" at M = {MAX_M}" if self.dynamic_m else ""),
              ("rw", "wn", "mt", "split_k"),
              lambda rw, wn, mt, sk: workspace_bytes(Mw, N, rw, wn, mt, sk) <= WORKSPACE_CAP),
        ]
        if not self.dynamic_m:
            rules += [
                C("mt no larger than the smallest that covers M", ("mt",), lambda mt: mt == 8 or mt // 2 < M),
                # a split pays for partials that only a GPU short of CTAs earns back
                C(f"split_k > 1 only while tiles x split_k <= 8 x {sms} SMs", ("rw", "wn", "mt", "split_k"),
                  lambda rw, wn, mt, sk: sk == 1 or tiles(M, N, rw, wn, mt) * sk <= 8 * sms),
            ]
        return Space(knobs, rules)

    def default_config(self, workload, device) -> dict:
        """64 rows of W a CTA (four warps of 16), 32 rows of A, slots of 128 k in a 4-deep ring, and
        enough K slices that the CTAs cover the SMs twice: a GEMV's streaming, before any tuning."""
        M, N = workload.M, workload.N
        mt = min(128, max(8, 1 << max(0, (M - 1).bit_length())))
        t = tiles(M, N, 1, 4, mt)
        sk = next((s for s in SPLIT_K_VALUES if t * s >= 2 * device.sm_count), SPLIT_K_VALUES[-1])
        cfg = {"rw": 1, "wn": 4, "wk": 2, "mt": mt, "kw": 64, "stages": 4, "split_k": sk}
        return self.space(workload, device).nearest(cfg)

    def derived_features(self, config: dict, params: dict, device) -> dict[str, float]:
        """CTAs, waves and CTAs an SM holds (threads, shared memory), tile use, bytes of W in
        flight a CTA, and the MMAs per W fragment (the rows of A it meets)."""
        c, M, N = config, params["M"], params["N"]
        t = threads(c["wn"], c["wk"])
        smem = smem_bytes(c["rw"], c["wn"], c["wk"], c["mt"], c["kw"], c["stages"])
        per_sm = max(1, min(device.max_threads_per_sm // t, device.smem_per_sm // max(1, smem)))
        ctas = tiles(M, N, c["rw"], c["wn"], c["mt"]) * c["split_k"]
        bn = bn_of(c["rw"], c["wn"])
        return {"threads": t, "blocks": ctas, "waves": ctas / (per_sm * device.sm_count), "blocks_per_sm": per_sm,
                "smem_bytes": smem, **tile_use(M, N, c["mt"], bn),
                "w_bytes_in_flight": (c["stages"] - 1) * bn * c["kw"] * c["wk"] * 2,
                "mma_per_w_fragment": c["mt"] / 8}

    def render(self, workload, config: dict, device) -> KernelSpec:
        cfg = self.space(workload, device).validate(config)
        M, N, K = workload.M, workload.N, workload.K
        rw, wn, wk, mt, sk = cfg["rw"], cfg["wn"], cfg["wk"], cfg["mt"], cfg["split_k"]
        values = {"BF16": workload.bf16, "RW": rw, "WN": wn, "WK": wk, "MT": mt, "KW": cfg["kw"],
                  "STAGES": cfg["stages"], "SPLIT_K": sk}
        elem = "__nv_bfloat16" if workload.bf16 else "half"
        return KernelSpec(
            family=self.family, workload_key=workload.key, config=tuple(sorted(cfg.items())),
            source=kernel_source(self.header),
            name_expression="hgemm_stream<" + ", ".join(str(values[a]) for a in _ARG_ORDER) + ">",
            grid=(-(-N // bn_of(rw, wn)), sk, -(-M // mt)),
            block=(threads(wn, wk), 1, 1),
            smem_bytes=smem_bytes(rw, wn, wk, mt, cfg["kw"], cfg["stages"]),
            args=(ArgSpec("A", "input", ctype=f"const {elem}*"), ArgSpec("B", "input", ctype=f"const {elem}*"),
                  ArgSpec("C", "output", ctype=f"{elem}*"),
                  ArgSpec("workspace", "workspace", value=workspace_bytes(M, N, rw, wn, mt, sk),
                          ctype="unsigned char*"),
                  ArgSpec("M", "scalar", value=M, ctype="int"), ArgSpec("N", "scalar", value=N, ctype="int"),
                  ArgSpec("K", "scalar", value=K, ctype="int")),
            arch=device.arch)

    def sanitizer_picks(self, workload, device) -> list[dict]:
        """The streaming template's corners: its deepest split (partials, counters, the last CTA's sum),
        the most shared memory, the most registers a thread, the most warps along K (the in-CTA sum),
        then the default and two random ones; none where it refuses the shape."""
        if self.refuses(workload) is not None:
            return []
        cfgs = self.space(workload, device).enumerate()
        smem = lambda c: smem_bytes(c["rw"], c["wn"], c["wk"], c["mt"], c["kw"], c["stages"])  # noqa: E731
        picks = [max(cfgs, key=lambda c: (c["split_k"], smem(c))), max(cfgs, key=smem),
                 max(cfgs, key=lambda c: (registers_needed(c["rw"], c["mt"]), c["wn"] * c["wk"])),
                 max(cfgs, key=lambda c: (c["wk"], c["kw"], c["split_k"]))]
        picks += default_and_random(self, workload, device)
        return distinct(picks)


class HgemmStreamDynTemplate(HgemmStreamTemplate, MicroKernelTemplate):
    """hgemm_stream as a dynamic-M micro-kernel: the same kernel and family, a space that reads no M
    (the rules on M are the cost model's business), any M served; the workspace ArgSpec is sized for
    the M rendered for (what the measuring worker allocates), ops.HgemmDispatch lays one buffer out
    for every M instead (hgemm_wgmma_splitk's dynamic_workspace: the same counters-then-partials)."""
    dynamic_m = True
    workspace = True
    nt_only = True
    switch = knobs.DYN_STREAM
    template_code = 2.0

    def sample(self, space, extents, rng, local_pad: int = 1) -> dict:
        return sample_stream(space, extents, rng)

    def mutate(self, space, config: dict, rng, extents) -> dict | None:
        return mutate_stream(space, config, rng, extents)

    def describe(self, config: dict) -> str:
        return stream_describe(config)

    def short(self, config: dict) -> str:
        c = config
        return f"stream {c['mt']}x{bn_of(c['rw'], c['wn'])} warps {c['wn']}x{c['wk']} kw{c['kw']} split{c['split_k']}"

    def unroll(self, config: dict) -> int:
        return stream_unroll(config)

    def threads(self, config: dict) -> int:
        return threads(config["wn"], config["wk"])

    def tile(self, config: dict) -> tuple[int, int]:
        return config["mt"], 16 * config["rw"] * config["wn"]

    def grid(self, M: int, N: int, config: dict, sm_count: int) -> tuple[int, int, int]:
        """N blocks of W rows, K slices, M blocks of A rows."""
        rows, cols = self.tile(config)
        return (-(-N // cols), config["split_k"], -(-M // rows))

    def c_grid(self, config: dict, N: int, sm_count: int) -> str:
        rows, cols = self.tile(config)
        return f"dim3({-(-N // cols)}, {config['split_k']}, (M + {rows - 1}) / {rows})"

    def seeds(self, space, N: int, lo: int, hi: int, sm_count: int) -> list[tuple[int, int, dict]]:
        """STREAM_SEEDS, each config up to its largest M from the one before."""
        firsts = [1] + [top + 1 for top, _ in STREAM_SEEDS[:-1]]
        return [(first, top, cfg) for first, (top, cfg) in zip(firsts, STREAM_SEEDS)]

    def resources(self, config: dict, workload, device) -> tuple[int, int, int, int]:
        c = config
        return (threads(c["wn"], c["wk"]), min(255, registers_needed(c["rw"], c["mt"])), 0,
                smem_bytes(c["rw"], c["wn"], c["wk"], c["mt"], c["kw"], c["stages"]))

    def modelled(self, config: dict, M: int, N: int, K: int, spec, device) -> tuple[float, int]:
        return modelled_stream_us(config, M, N, K, device), min(255, registers_needed(config["rw"], config["mt"]))

    def probe_features(self, config: dict, workload, device) -> list[float]:
        c = config
        return [math.log2(c[k]) for k in ("rw", "wn", "wk", "mt", "kw", "stages", "split_k")] + [
            math.log2(self.threads(c)), math.log2(self.unroll(c))]


# -- hgemm_stream micro-kernels ----------------------------------------------------------------------
# The weight-streaming kernel for few rows (templates/hgemm_stream.py, behind its dyn_stream_enabled).
# Its tiles, from the outside in:
#
#     N (rows of W):  grid x                 | wn warps (threadIdx) | rw: 16-row blocks a warp owns
#     M (rows of A):  grid z (ceil(M/mt))    | every warp           | mt / 8 MMA columns
#     K:              grid y (split_k)       | wk warps (threadIdx) | kw a warp takes of each ring slot
#
# so its output tile is mt x BN with BN = 16 x rw x wn.  `sample_stream` draws the warps (wn, wk: the
# block's threads) first, then (rw, mt) jointly under the accumulator budget (rw x mt / 2 floats a
# thread), then kw, the ring depth and split_k; `mutate_stream` keeps the warps.  The unroll (MMAs a
# warp issues per ring slot: rw x mt / 8 x kw / 16) is derived, never drawn.


def stream_unroll(config: dict) -> int:
    c = config
    return c["rw"] * (c["mt"] // 8) * (c["kw"] // 16)


def sample_stream(space: Space, extents: tuple[int, int], rng: random.Random, max_tries: int = 2000) -> dict:
    """One hgemm_stream micro-kernel of HgemmStreamDynTemplate's space, drawn jointly: ConfigError if
    none is found."""
    vals = {k.name: k.values for k in space.knobs}
    for _ in range(max_tries):
        wn, wk = rng.choice(vals["wn"]), rng.choice(vals["wk"])
        if not 64 <= 32 * wn * wk <= 512:
            continue
        inner = [(rw, mt) for rw in vals["rw"] for mt in vals["mt"] if rw * mt // 2 <= MAX_ACC]
        rw, mt = rng.choice(inner)
        cfg = {"rw": rw, "wn": wn, "wk": wk, "mt": mt, "kw": rng.choice(vals["kw"]),
               "stages": rng.choice(vals["stages"]), "split_k": rng.choice(vals["split_k"])}
        if space.contains(cfg):
            return cfg
    raise ConfigError(f"no hgemm_stream micro-kernel found for extents {extents} in {max_tries} draws")


def mutate_stream(space: Space, config: dict, rng: random.Random, extents: tuple[int, int],
                  max_tries: int = 50) -> dict | None:
    """A neighbour keeping the warps (wn, wk): a factor of 2 moved between rw and mt (the same
    accumulators), rw, mt or kw resampled, or the ring depth or split_k changed."""
    vals = {k.name: k.values for k in space.knobs}
    for _ in range(max_tries):
        c = dict(config)
        move = rng.random()
        if move < 0.3:
            if c["rw"] * 2 in vals["rw"] and c["mt"] // 2 in vals["mt"]:
                c["rw"], c["mt"] = c["rw"] * 2, c["mt"] // 2
            elif c["rw"] // 2 in vals["rw"] and c["mt"] * 2 in vals["mt"]:
                c["rw"], c["mt"] = c["rw"] // 2, c["mt"] * 2
        elif move < 0.7:
            knob = rng.choice(("rw", "mt", "kw"))
            c[knob] = rng.choice(vals[knob])
        else:
            knob = rng.choice(("stages", "split_k"))
            c[knob] = rng.choice(vals[knob])
        if c != config and space.contains(c):
            return c
    return None


def stream_describe(config: dict) -> str:
    c = config
    return (f"stream {c['mt']}x{16 * c['rw'] * c['wn']} warps {c['wn']}x{c['wk']} rw {c['rw']} kw {c['kw']} "
            f"st{c['stages']} split{c['split_k']} unroll {stream_unroll(c)}")

# -- the synthetic runner's model of it (templates/gemm_model.py) ------------------------------------

def modelled_stream_us(config: dict, M: int, N: int, K: int, device) -> float:
    """hgemm_stream: ceil(N / BN) x ceil(M / mt) x split_k CTAs, each streaming its BN rows of W and mt
    rows of A over K / split_k at an SM's share of the bandwidth (a fraction of it while the ring
    keeps few bytes in flight) or computing at mma.sync's rate, whichever is slower; waves as
    hgemm_dyn's (a partial last wave leaves SMs, and their bandwidth, idle), the split's partials, the
    memory floor, launch and noise.  W is read once per M block, so past a few blocks the tiled
    templates win.  MODELLED, not measured."""
    c, sk = config, config["split_k"]
    bm, bn = c["mt"], bn_of(c["rw"], c["wn"])
    t = 32 * c["wn"] * c["wk"]
    bps = blocks_per_sm(t, min(255, registers_needed(c["rw"], c["mt"])),
                        smem_bytes(c["rw"], c["wn"], c["wk"], c["mt"], c["kw"], c["stages"]), device)
    if bps < 1:
        return float("nan")
    ctas = -(-N // bn) * -(-M // bm) * sk
    k_slice = -(-K // sk)
    in_flight = min(1.0, (c["stages"] - 1) * c["kw"] * c["wk"] / 256)
    cta_bytes = (bn + bm) * k_slice * 2 + (bm * bn * 4 * (2 - 1 / sk) if sk > 1 else 0)
    cta_compute_us = 2.0 * bm * bn * k_slice / (gemm_model.PEAK_SM_TFLOPS * 1e12 * 0.7) * 1e6
    sm_bw = gemm_model.BANDWIDTH / device.sm_count

    def wave_us(resident: int) -> float:
        return max(resident * cta_compute_us, resident * cta_bytes / (sm_bw * in_flight) * 1e6)
    per_wave = bps * device.sm_count
    full, rem = divmod(ctas, per_wave)
    us = full * wave_us(bps) + (wave_us(-(-rem // device.sm_count)) if rem else 0.0)
    return (max(us, gemm_model.floor_us(M, N, K)) + gemm_model.LAUNCH_US) * gemm_model.noise(c, M, N, K, "str")
