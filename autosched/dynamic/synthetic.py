"""A synthetic runner for hgemm_dyn, hgemm_wgmma, hgemm_wgmma_splitk and hgemm_stream: modelled times, for testing the dynamic pipeline on a machine
with no GPU and no recording of the shapes it asks for (the probe instances are made up per
micro-kernel, so no recording could hold them).

Its times are NOT measurements: every Measurement says source "synthetic:model", and the CLI and API
print so.  The model has what the DietCode cost model must learn: per-tile compute time growing with
the tile and falling with arithmetic intensity and occupancy, waves (a partial last wave costs as
much as the residents it holds), padding waste (a 128-row tile for M = 65 computes 128 rows), a
memory floor (reading W once), a predicate cost for the guarded variant, register spills past 200
registers, and a few percent of deterministic per-(config, M) noise, so predictions are never exact.
"""

from __future__ import annotations

import hashlib

from autosched.measure.result import Measurement, Status
from autosched.measure.runner import Runner
from autosched.templates.gemm_tiles import threads
from autosched.templates.hgemm_dyn import blocks_per_sm, launch_bounds_registers, unroll
from autosched.templates.hgemm_mma import registers_needed, smem_bytes

PEAK_SM_TFLOPS = 4.5          # mma.sync FP16 per SM at full occupancy (about 600 TFLOP/s on 132 SMs)
BANDWIDTH = 3.0e12            # B/s
LAUNCH_US = 3.0


def registers_wanted(config: dict) -> int:
    return registers_needed(config["wm"], config["wn"]) + (6 if not config["local_pad"] else 0)


def registers(config: dict, device) -> int:
    """As ptxas would allocate: capped by the kernel's __launch_bounds__ (the rest spills)."""
    c = config
    return min(registers_wanted(c), launch_bounds_registers(threads(c["bm"], c["bn"], c["wm"], c["wn"]), device))


def modelled_us(config: dict, M: int, N: int, K: int, b_col: int, device) -> float:
    c = config
    t = threads(c["bm"], c["bn"], c["wm"], c["wn"])
    regs = registers(c, device)
    bps = blocks_per_sm(t, regs, smem_bytes(c["bm"], c["bn"], c["bk"], c["stages"], c["pad"], b_col), device)
    if bps < 1:
        return float("nan")
    tiles = -(-M // c["bm"]) * -(-N // c["bn"])
    ai = c["bm"] * c["bn"] / (c["bm"] + c["bn"])                 # flops per loaded element, per k
    eff = min(1.0, ai / 48.0) * min(1.0, (unroll(c) / 8.0) ** 0.25)
    eff *= 0.85 if c["stages"] == 2 else 1.0
    eff *= 0.9 if c["pad"] == 0 else 1.0
    eff *= 0.93 if not c["local_pad"] else 1.0                 # predicates in the compute loop
    eff *= 0.6 if regs > 200 or regs < registers_wanted(c) else 1.0     # spills

    def wave_us(resident: int) -> float:
        # `resident` blocks share one SM: latency hiding grows with the warps it holds
        warps = resident * t / 32
        occ = min(1.0, 0.35 + 0.65 * warps / 16)
        flops = resident * 2.0 * c["bm"] * c["bn"] * K
        return flops / (PEAK_SM_TFLOPS * 1e12 * eff * occ) * 1e6

    per_wave = bps * device.sm_count
    full, rem = divmod(tiles, per_wave)
    us = full * wave_us(bps) + (wave_us(-(-rem // device.sm_count)) if rem else 0.0)
    floor = 2.0 * (N * K + M * K + M * N) / BANDWIDTH * 1e6
    return (max(us, floor) + LAUNCH_US) * _noise(c, M, N, K)


WGMMA_PEAK_SM_TFLOPS = 7.0   # wgmma FP16 per SM (about 920 TFLOP/s on 132 SMs)


def modelled_wgmma_us(config: dict, M: int, N: int, K: int, device) -> float:
    """hgemm_wgmma, persistent: ceil(tiles / #SMs) rounds of one tile an SM, a tile's time from the
    wgmma rate times an efficiency (tile intensity against the 128 x 256 tile's, one consumer 0.85,
    a 2-slot ring 0.8, narrower swizzles 0.8 / 0.9), the memory floor, launch and noise."""
    c = config
    tiles = -(-M // c["bm"]) * -(-N // c["bn"])
    tile_us = 2.0 * c["bm"] * c["bn"] * K / (WGMMA_PEAK_SM_TFLOPS * 1e12 * wgmma_efficiency(c)) * 1e6
    us = -(-tiles // device.sm_count) * tile_us
    floor = 2.0 * (N * K + M * K + M * N) / BANDWIDTH * 1e6
    return (max(us, floor) + LAUNCH_US) * _noise(c, M, N, K, "wg")


def wgmma_efficiency(c: dict) -> float:
    """A wgmma tile's share of the SM's peak (both wgmma models): its intensity against the 128 x 256
    tile's, one consumer 0.85, a 2-slot ring 0.8, narrower swizzles 0.8 / 0.9."""
    ai = c["bm"] * c["bn"] / (c["bm"] + c["bn"])
    eff = min(1.0, ai / 85.0) * (0.85 if c["consumers"] == 1 else 1.0) * (0.8 if c["stages"] == 2 else 1.0)
    return eff * {32: 0.8, 64: 0.9, 128: 1.0}[c["swizzle"]]


def _noise(c: dict, M: int, N: int, K: int, *tag) -> float:
    """A fixed +-2% per (config, shape[, tag]): repeatable, as a real GPU's run-to-run order is not."""
    h = int(hashlib.sha256(repr((sorted(c.items()), M, N, K, *tag)).encode()).hexdigest()[:8], 16)
    return 1.0 + 0.04 * (h / 0xFFFFFFFF - 0.5)


SPLIT_SYNC_US = 0.3          # a work unit's counter atomic and the wait on its partial's visibility


def modelled_wgmma_splitk_us(config: dict, M: int, N: int, K: int, device) -> float:
    """hgemm_wgmma_splitk, persistent over work units (tile, K slice): ceil(tiles x split_k / #SMs)
    rounds of one unit an SM.  A unit is a wgmma tile over K / split_k at the efficiency of
    `modelled_wgmma_us`, plus its FP32 partial written and, for the last slice, the others' read back
    (at an SM's share of the bandwidth) and a counter's sync.  So at a small M, whose few tiles leave
    SMs idle, more units fill them; at a large M the rounds only grow by the partials' cost.  The
    memory floor adds the partials' traffic to the operands'.  MODELLED, not measured."""
    c, sk = config, config["split_k"]
    tiles = -(-M // c["bm"]) * -(-N // c["bn"])
    eff = wgmma_efficiency(c)
    k_slice = -(-K // sk)
    partial = c["bm"] * c["bn"] * 4
    unit_us = (2.0 * c["bm"] * c["bn"] * k_slice / (WGMMA_PEAK_SM_TFLOPS * 1e12 * eff) * 1e6
               + partial * (2 - 1 / sk) / (BANDWIDTH / device.sm_count) * 1e6 + SPLIT_SYNC_US)
    us = -(-tiles * sk // device.sm_count) * unit_us
    floor = (2.0 * (N * K + M * K + M * N) + 2.0 * tiles * sk * partial) / BANDWIDTH * 1e6
    return (max(us, floor) + LAUNCH_US) * _noise(c, M, N, K, "wgs")


def modelled_stream_us(config: dict, M: int, N: int, K: int, device) -> float:
    """hgemm_stream: ceil(N / BN) x ceil(M / mt) x split_k CTAs, each streaming its BN rows of W and mt
    rows of A over K / split_k at an SM's share of the bandwidth (a fraction of it while the ring
    keeps few bytes in flight) or computing at mma.sync's rate, whichever is slower; waves as
    hgemm_dyn's (a partial last wave leaves SMs, and their bandwidth, idle), the split's partials, the
    memory floor, launch and noise.  W is read once per M block, so past a few blocks the tiled
    templates win.  MODELLED, not measured."""
    from autosched.templates.hgemm_stream import bn_of, registers_needed as stream_regs, smem_bytes as stream_smem
    c, sk = config, config["split_k"]
    bm, bn = c["mt"], bn_of(c["rw"], c["wn"])
    t = 32 * c["wn"] * c["wk"]
    bps = blocks_per_sm(t, min(255, stream_regs(c["rw"], c["mt"])),
                        stream_smem(c["rw"], c["wn"], c["wk"], c["mt"], c["kw"], c["stages"]), device)
    if bps < 1:
        return float("nan")
    ctas = -(-N // bn) * -(-M // bm) * sk
    k_slice = -(-K // sk)
    in_flight = min(1.0, (c["stages"] - 1) * c["kw"] * c["wk"] / 256)
    cta_bytes = (bn + bm) * k_slice * 2 + (bm * bn * 4 * (2 - 1 / sk) if sk > 1 else 0)
    cta_compute_us = 2.0 * bm * bn * k_slice / (PEAK_SM_TFLOPS * 1e12 * 0.7) * 1e6
    sm_bw = BANDWIDTH / device.sm_count

    def wave_us(resident: int) -> float:
        return max(resident * cta_compute_us, resident * cta_bytes / (sm_bw * in_flight) * 1e6)
    per_wave = bps * device.sm_count
    full, rem = divmod(ctas, per_wave)
    us = full * wave_us(bps) + (wave_us(-(-rem // device.sm_count)) if rem else 0.0)
    floor = 2.0 * (N * K + M * K + M * N) / BANDWIDTH * 1e6
    return (max(us, floor) + LAUNCH_US) * _noise(c, M, N, K, "str")


SM_L2_BYTES_S = 1.1e11       # what one SM's loads draw from L2: ~64 bytes a clock at 1.7 GHz


def modelled_swap_us(config: dict, M: int, N: int, K: int, device) -> float:
    """hgemm_wgmma_swap, persistent: ceil(tiles x split_k / #SMs) rounds of one work unit an SM, tiles
    BT tokens x BW weight rows over K / split_k; a unit's time the slower of its wgmma work (at the
    efficiency of `modelled_wgmma_us`, one consumer) and its (BW + BT) x K / split_k operands at an
    SM's rate from L2 (the token tiles of one W tile run side by side, so W comes from DRAM about
    once), so narrow token tiles make many CTAs that each read little, plus a split unit's partial
    written and read back (a quarter of that where the slices meet in a cluster's shared memory, whose
    grid is every unit); the memory floor, launch and noise.  MODELLED, not measured."""
    c = config
    bt, bw, sk = c["bt"], c["bw"], c["split_k"]
    cluster = c.get("reduce") == "cluster"
    units = -(-M // bt) * -(-N // bw) * sk
    eff = wgmma_efficiency({"bm": bw, "bn": bt, "consumers": 1, "stages": c["stages"], "swizzle": c["swizzle"]})
    kk = K / sk
    unit_us = max(2.0 * bw * bt * kk / (WGMMA_PEAK_SM_TFLOPS * 1e12 * eff) * 1e6,
                  (bw + bt) * kk * 2 / SM_L2_BYTES_S * 1e6)
    if sk > 1:
        unit_us += (0.25 if cluster else 1.0) * 2 * bw * bt * 4 / SM_L2_BYTES_S * 1e6
    us = -(-units // device.sm_count) * unit_us
    floor = 2.0 * (N * K + M * K + M * N) / BANDWIDTH * 1e6
    return (max(us, floor) + LAUNCH_US) * _noise(c, M, N, K, "swap")


def modelled_sched_us(config: dict, M: int, N: int, K: int, device) -> float:
    """hgemm_wgmma_sched: `modelled_wgmma_us` of two consumers, a ping-pong schedule 5% slower (what the
    H100 measured everywhere, 2026-11-27) and a box-ring staging 2% faster (its deeper ring).  MODELLED,
    not measured."""
    c = config
    us = modelled_wgmma_us({"bm": c["bm"], "bn": c["bn"], "consumers": 2, "swizzle": c["swizzle"],
                            "stages": c["stages"], "group": c["group"]}, M, N, K, device)
    return us * (1.05 if c["schedule"] == "pingpong" else 1.0) * (0.98 if c["epi_boxes"] else 1.0)


MODELLED = ("hgemm_dyn", "hgemm_wgmma", "hgemm_wgmma_splitk", "hgemm_stream", "hgemm_wgmma_swap",
            "hgemm_wgmma_sched")


class SyntheticRunner(Runner):
    """Answers hgemm_dyn, hgemm_wgmma, hgemm_wgmma_splitk, hgemm_stream, hgemm_wgmma_swap and
    hgemm_wgmma_sched specs from `modelled_us`, `modelled_wgmma_us`, `modelled_wgmma_splitk_us`,
    `modelled_stream_us`, `modelled_swap_us` and `modelled_sched_us` (any M, N, K): a test double of
    GpuRunner."""

    name = "synthetic"
    needs_binary = False

    def __init__(self, device):
        self._device = device
        self.calls = 0

    @property
    def device_info(self):
        return self._device

    def build_id(self, template) -> str:
        return f"{template.source_hash()[:12]}/synthetic"

    def measure(self, spec, binary=None) -> Measurement:
        self.calls += 1
        if spec.family not in MODELLED:
            return Measurement(Status.NOT_RECORDED, error=f"the synthetic runner models {', '.join(MODELLED)} "
                               f"only, not {spec.family}", source="synthetic:model")
        cfg = dict(spec.config)
        args = {a.name: a.value for a in spec.args if a.role == "scalar"}
        if spec.family in ("hgemm_wgmma", "hgemm_wgmma_splitk"):
            from autosched.dynamic.measurer import wgmma_registers
            model = modelled_wgmma_splitk_us if spec.family == "hgemm_wgmma_splitk" else modelled_wgmma_us
            us = model(cfg, args["M"], args["N"], args["K"], self._device)
            return Measurement(Status.OK, 0.99 * us, us, 0.01 * us, 0.0, registers=wgmma_registers(cfg),
                               smem_bytes=spec.smem_bytes, source="synthetic:model", runs=1)
        if spec.family == "hgemm_wgmma_sched":
            from autosched.dynamic.measurer import wgmma_registers
            us = modelled_sched_us(cfg, args["M"], args["N"], args["K"], self._device)
            return Measurement(Status.OK, 0.99 * us, us, 0.01 * us, 0.0, registers=wgmma_registers({"consumers": 2}),
                               smem_bytes=spec.smem_bytes, source="synthetic:model", runs=1)
        if spec.family == "hgemm_wgmma_swap":
            from autosched.dynamic.measurer import swap_registers
            us = modelled_swap_us(cfg, args["M"], args["N"], args["K"], self._device)
            return Measurement(Status.OK, 0.99 * us, us, 0.01 * us, 0.0, registers=swap_registers(cfg),
                               smem_bytes=spec.smem_bytes, source="synthetic:model", runs=1)
        if spec.family == "hgemm_stream":
            from autosched.templates.hgemm_stream import registers_needed as stream_regs
            us = modelled_stream_us(cfg, args["M"], args["N"], args["K"], self._device)
            if us != us:
                return Measurement(Status.LAUNCH_ERROR, error="too many resources for one block",
                                   source="synthetic:model")
            return Measurement(Status.OK, 0.99 * us, us, 0.01 * us, 0.0,
                               registers=min(255, stream_regs(cfg["rw"], cfg["mt"])),
                               smem_bytes=spec.smem_bytes, source="synthetic:model", runs=1)
        b_col = int("b_col=1" in spec.workload_key)
        us = modelled_us(cfg, args["M"], args["N"], args["K"], b_col, self._device)
        if us != us:
            return Measurement(Status.LAUNCH_ERROR, error="too many resources for one block",
                               source="synthetic:model")
        return Measurement(Status.OK, 0.99 * us, us, 0.01 * us, 0.0, registers=registers(cfg, self._device),
                           smem_bytes=spec.smem_bytes, source="synthetic:model", runs=1)

    def measure_stream(self, items):
        for tag, spec, binary in items:
            yield tag, self.measure(spec, binary)
