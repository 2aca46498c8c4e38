"""The program measurer of DietCode: a micro-kernel's compile report and its time at two grids.

Compile report: threads a block, registers a thread (ptxas, through the builder's NVRTC, which runs on
a CPU too; an estimate from the tile sizes where no builder is given), shared memory a block, and
from them the blocks an SM holds (`blocks_per_sm`).

Two probes: the micro-kernel's time with grid = #SMs (one block an SM) and grid = blocks_per_sm x
#SMs (one full wave).  A probe is an ordinary launch of the kernel on a made-up instance of exactly
that many tiles, a x b = G, with a tiles down M (M = a * BM) and b <= ceil(N/BN) across N (N' = b *
BN): the K of the workload, so each tile does the real work, and no change to the kernel (a
persistent loop or a grid override would time a different program from the one dispatched), and the
output is still whole, so the runner's correctness check holds as for any measurement.  Of the
factorizations the widest b (closest to the real N) is taken.

The row probe (optional, `row_probe=True`): the micro-kernel on the range's smallest real shape, one
row of tiles over the whole N (M = BM, N' = N).  The grid probes lay their tiles out as widely as the
grid divides, which for few columns of tiles means two or three rows of them over part of W: in the
memory-bound regime of a small M they read less of W than an instance does, and time faster than it
(bench/results/checks/dynamic-row-probe-quick-*-2026-11-26.json).  The cost model takes no
partial wave faster than it (cost_model.MicroKernelCostModel.analytic_us).

A split-K micro-kernel (hgemm_wgmma_splitk) runs work units, (tile, K slice), on its persistent grid:
its probe grids count work units, and its probe instance holds grid // split_k tiles, so that one
probe is one full wave of work units with the partials' traffic and the last slice's sum in it.
hgemm_stream's CTAs are its work units too (grid y is its K slices), and its tile is mt rows of A
by BN rows of W (sketch.tile_of).
"""

from __future__ import annotations

from concurrent.futures import as_completed

import dataclasses
import time
from dataclasses import dataclass

from autosched.dynamic.sketch import tile_of
from autosched.measure.result import Measurement
from autosched.space import config_hash
from autosched.templates.hgemm_dyn import blocks_per_sm
from autosched.workloads import Hgemm


@dataclass(frozen=True)
class CompileReport:
    threads: int
    registers: int
    smem_bytes: int
    spills: int
    blocks_per_sm: int
    source: str                 # "ptxas" or "estimate"

    def to_json(self) -> dict:
        return dataclasses.asdict(self)


@dataclass
class MicroKernel:
    config: dict
    report: CompileReport
    probes: dict                # grid (blocks) -> median us; two entries when measured
    error: str = ""
    row_us: float | None = None # the row probe's median (M = BM, N' = N), where it was taken
    family: str = "hgemm_dyn"   # the template (a sketch dimension: templates/micro_kernels.py)

    @property
    def ok(self) -> bool:
        return not self.error and bool(self.probes)

    @property
    def grids(self) -> tuple[int, int]:
        """(#SMs, blocks_per_sm x #SMs): one grid twice where an SM holds one block."""
        g = sorted(self.probes)
        return g[0], g[-1]

    def to_json(self) -> dict:
        return {"config": self.config, "report": self.report.to_json(),
                "probes": {str(k): v for k, v in self.probes.items()}, "error": self.error, "family": self.family,
                "row_us": self.row_us}

    @classmethod
    def from_json(cls, d: dict) -> "MicroKernel":
        return cls(d["config"], CompileReport(**d["report"]), {int(k): v for k, v in d["probes"].items()},
                   d.get("error", ""), d.get("row_us"), d.get("family", "hgemm_dyn"))


def _ptxas(built, regs: int, spills: int, smem: int) -> tuple[int, int, int, str]:
    """(registers, spills, shared memory, source): ptxas's where the build succeeded (its static
    shared memory added to the dynamic), else the estimates given."""
    if built is not None:
        b = built.result()
        if b.ok:
            return b.resources.registers, b.resources.spills, smem + b.resources.smem_static, "ptxas"
    return regs, spills, smem, "estimate"


def compile_report(template, config: dict, workload, device, builder=None, built=None) -> CompileReport:
    """Threads, registers (ptxas with a builder, else estimated), shared memory and blocks an SM
    holds (the template's estimates: its `resources`).  A persistent template (its grid at most #SMs,
    one CTA an SM by launch bounds) holds one block an SM whatever the resources would admit.
    `built`: the binary's Future when the caller submitted the build already (so that many configs
    compile side by side)."""
    if built is None and builder is not None:
        built = builder.submit(template.render(workload, config, device))
    t, regs, spills, smem = template.resources(config, workload, device)
    regs, spills, smem, source = _ptxas(built, regs, spills, smem)
    if template.persistent:
        # one CTA an SM if its block fits, whatever more the resources would admit
        fits = smem <= min(device.smem_per_block_optin, device.smem_per_sm) and regs * t <= device.regs_per_block
        return CompileReport(t, regs, smem, spills, int(fits), source)
    return CompileReport(t, regs, smem, spills, blocks_per_sm(t, regs, smem, device), source)


def probe_shape(config: dict, grid: int, N: int, family: str = "hgemm_dyn") -> tuple[int, int]:
    """(M, N') of an instance of exactly `grid` tiles: a x b = grid, b <= ceil(N / BN), b largest."""
    bm, bn = tile_of(family, config)
    cols = -(-N // bn)
    b = max(d for d in range(1, min(cols, grid) + 1) if grid % d == 0)
    return (grid // b) * bm, b * bn


def probe_workloads(config: dict, report: CompileReport, dw, device, family: str = "hgemm_dyn") -> dict:
    """grid -> the concrete workload of its probe (grid #SMs and blocks_per_sm x #SMs; of a split-K
    micro-kernel in work units, its instance holding grid // split_k tiles)."""
    out = {}
    split = config.get("split_k", 1)
    for g in sorted({device.sm_count, max(1, report.blocks_per_sm) * device.sm_count}):
        m, n = probe_shape(config, max(1, g // split), dw.N, family)
        out[g] = Hgemm.from_shape(f"{m}x{n}x{dw.K}", layout=dw.layout, dtype=dw.dtype)
    return out


ROW = 0        # the row probe's tag among a micro-kernel's probes in flight (no grid is 0 blocks)


def row_workload(config: dict, dw, family: str):
    """The row probe's instance: one row of tiles (M = BM rows) over the whole N."""
    return Hgemm.from_shape(f"{tile_of(family, config)[0]}x{dw.N}x{dw.K}", layout=dw.layout, dtype=dw.dtype)


def measure_micro_kernels(template, configs, dw, runner, db=None, builder=None, versions=None,
                          row_probe: bool = False) -> list[MicroKernel]:
    """Each config's compile report and probes (with `row_probe`, the row probe too); a probe the
    database holds (same build) is not taken again, and every new one is written to it."""
    return measure_pairs([(template, c) for c in configs], dw, runner, db, builder, versions, row_probe)


def measure_pairs(pairs, dw, runner, db=None, builder=None, versions=None, row_probe: bool = False,
                  timeline: dict | None = None) -> list[MicroKernel]:
    """measure_micro_kernels over (template, config) pairs of any templates in one stream of probes:
    the GPU takes whichever kernel's build finishes first, so one template's NVRTC time overlaps
    another's probes instead of each template's stream waiting on its own first builds.
    `timeline` (a dict, optional) gets seconds from the call: first_build_s and last_build_s (the
    kernels' builds done), first_result_s and last_result_s (their probes' measurements back)."""
    t0 = time.perf_counter()
    marks: dict = timeline if timeline is not None else {}

    def mark(name: str, first: bool) -> None:
        now = round(time.perf_counter() - t0, 4)
        if first:
            marks.setdefault(name, now)
        else:
            marks[name] = now
    pairs = list(pairs)
    device = runner.device_info
    builds = {t.family: runner.build_id(t) for t, _ in pairs}
    # every config's build is submitted before the first report waits on one: NVRTC runs on all cores
    # (one at a time, a wgmma micro-kernel's ~2 s compile each made most of a dynamic run's time)
    built = [builder.submit(t.render(dw.largest, cfg, device)) if builder is not None else None for t, cfg in pairs]
    out: list[MicroKernel | None] = [None] * len(pairs)
    where: list[tuple] = []

    def probes_of(i: int) -> list[tuple]:
        template, cfg = pairs[i]
        rep = compile_report(template, cfg, dw.largest, device, builder, built=built[i])
        mk = out[i] = MicroKernel(dict(cfg), rep, {}, family=template.family)
        if rep.blocks_per_sm < 1:
            mk.error = f"does not fit on an SM ({rep.registers} registers x {rep.threads} threads, {rep.smem_bytes} B)"
            return []
        # the shapes of one row family (measure/row_family.py: the same N') by growing M: the worker
        # computes a family's rows only as far as the largest M so far
        probes = list(probe_workloads(cfg, rep, dw, device, template.family).items())
        if row_probe:
            probes.append((ROW, row_workload(cfg, dw, template.family)))
        probes.sort(key=lambda gw: (gw[1].row_family_key(), gw[1].M))
        items = []
        build = builds[template.family]
        for g, w in probes:
            held = db.measured(w.key, device.key, template.family, build=build).get(config_hash(cfg)) if db else None
            if held is not None:
                _take(mk, g, held.measurement)
                continue
            spec = template.render(w, cfg, device)
            items.append((len(where), spec, builder.submit(spec) if builder is not None else None))
            where.append((mk, g, w))
        return items

    def stream():
        """Probe items as their kernels' builds finish (the probe shapes need the compile report): the
        GPU measures the first kernels while NVRTC still compiles the rest."""
        if builder is None:
            order = range(len(pairs))
        else:
            index: dict[int, list[int]] = {}
            for i, f in enumerate(built):        # two configs of one kernel share a build's future
                index.setdefault(id(f), []).append(i)
            order = (i for f in as_completed(set(built)) for i in index[id(f)])
        for i in order:
            mark("first_build_s", True)
            mark("last_build_s", False)
            yield from probes_of(i)

    for i, m in runner.measure_stream(stream()):
        mark("first_result_s", True)
        mark("last_result_s", False)
        mk, g, w = where[i]
        if db is not None:
            db.add(w.key, device.key, mk.family, mk.config, m, versions or {}, build=builds[mk.family])
        _take(mk, g, m)
    return out


def _take(mk: MicroKernel, g: int, m: Measurement) -> None:
    if m.ok and g == ROW:
        mk.row_us = m.median_us
    elif m.ok:
        mk.probes[g] = m.median_us
    else:
        what = "row probe" if g == ROW else f"probe grid {g}"
        mk.error = mk.error or f"{what}: {m.status.value} {m.error}".strip()
