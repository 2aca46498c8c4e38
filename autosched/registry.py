"""The registry of operator families: one entry per family, which everything else iterates over.

A family names a workload (its class), the templates that may serve it (each may refuse a given
workload: `Template.refuses`), the shape syntax users type, its benchmark and report section, and
the configs a compute-sanitizer run picks.  The CLI, `autosched bench`, `autosched report`, the
sanitizer and ncu scripts read it; adding a family is its workload, its template module, its .cuh
and one entry in FAMILIES below.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Callable

from autosched.templates.base import Template
from autosched.workloads.base import Workload, WorkloadError


@dataclass(frozen=True)
class Option:
    """A choice a family's workload takes beside its shape (the CLI's --NAME, a keyword of
    api.workload and Family.parse); the workload's from_shape receives it as a keyword."""
    name: str                                   # --layout; from_shape(shape, layout=...)
    choices: tuple[str, ...]
    default: str                                # what the workload is without the option
    help: str


@dataclass(frozen=True)
class Family:
    name: str                                   # the CLI's name: autosched tune NAME --shape ...
    workload: type                              # the Workload subclass; .from_shape parses a shape
    templates: tuple[Template, ...]             # every template that may serve the workload
    summary: str                                # one line for --help
    shape_help: str                             # the shape syntax, with an example
    benchmark: str | None = None                # "module:function" that `autosched bench NAME` runs
    bench_help: str = ""                        # what the benchmark compares, for `bench --help`
    bench_kwargs: dict = field(default_factory=dict)
    bench_trials: int | None = 600              # `bench`'s trials a shape without --trials (None: the
                                                # benchmark plans its own, as hgemm's per template)
    default_bench_shapes: tuple[str, ...] = ()  # BENCHMARKS.md's shapes (the benchmark's default)
    report: str | None = None                   # results prefix the report renders (bench/results/<report>-*)
    report_title: str = ""
    report_section: str | None = None           # "module:function" rendering it into the README block <report>
    sanitize_shapes: tuple[str, ...] = ()       # ragged shapes a sanitizer run covers by default
    sanitize_picks: Callable | None = None      # (template, workload, device) -> configs to run
    profile_baseline: str | None = None         # "module:function" (workload, inputs, builder, device) ->
                                                # a launch of the baseline a profile shows beside ours
    options: tuple[Option, ...] = ()            # what the workload takes beside its shape

    def parse(self, shape: str, **options) -> Workload:
        """The workload at `shape` with `options` (each one of self.options; None: not given), or
        WorkloadError naming the syntax, or the option this family does not take."""
        given = {k: v for k, v in options.items() if v is not None}
        mine = {o.name: o for o in self.options}
        for name, value in given.items():
            if name not in mine:
                others = [f.name for f in FAMILIES.values() if any(o.name == name for o in f.options)]
                takes = f"; --{name} is for {', '.join(others)}" if others else ""
                raise WorkloadError(f"{self.name} takes no option --{name}" + (
                    f" (its options: {', '.join('--' + o for o in mine)})" if mine else "") + takes)
            if not isinstance(value, str) or value.lower() not in mine[name].choices:
                raise WorkloadError(f"{self.name}: --{name} must be one of {', '.join(mine[name].choices)}, "
                                    f"got {value!r}")
        given = {k: v.lower() for k, v in given.items()}
        try:
            return self.workload.from_shape(shape, **given)
        except WorkloadError:
            raise
        except (ValueError, TypeError) as e:
            raise WorkloadError(f"{self.name}: cannot read shape {shape!r} ({e}); expected {self.shape_help}") from e

    def templates_for(self, workload) -> list[Template]:
        """The templates that accept `workload` (a template may refuse a shape it cannot serve)."""
        return [t for t in self.templates if t.refuses(workload) is None]

    def benchmark_fn(self) -> Callable:
        if self.benchmark is None:
            raise ValueError(f"{self.name} has no benchmark")
        return _resolve(self.benchmark)

    def baseline_fn(self) -> Callable | None:
        return _resolve(self.profile_baseline) if self.profile_baseline else None

    def report_fn(self) -> Callable:
        if self.report_section is None:
            raise ValueError(f"{self.name} has no report section")
        return _resolve(self.report_section)


def _resolve(path: str) -> Callable:
    """"module:function" -> the function (imported on use: the registry sits below what it names)."""
    import importlib
    module, _, fn = path.partition(":")
    return getattr(importlib.import_module(module), fn)


def _default_and_random(template, workload, device, n: int = 2, seed: int = 2) -> list[dict]:
    cfgs = template.space(workload, device).enumerate()
    picks = [template.default_config(workload, device)]
    return picks + random.Random(seed).sample(cfgs, min(n, len(cfgs)))


def _gemv_picks(template, workload, device) -> list[dict]:
    from autosched.templates.gemv_q4f16 import extreme_configs
    return extreme_configs(template.space(workload, device).enumerate())


def _sgemm_picks(template, workload, device, n: int = 4) -> list[dict]:
    """The configs staging the most dynamic shared memory over the 48 KB every launch gets (the
    opt-in path), then two random ones of those."""
    from autosched.device import STATIC_SMEM_LIMIT
    from autosched.templates.sgemm import dynamic_smem
    big = sorted((c for c in template.space(workload, device) if dynamic_smem(c) > STATIC_SMEM_LIMIT),
                 key=lambda c: -dynamic_smem(c))
    return big[:n - 2] + random.Random(2).sample(big, min(2, len(big)))


def _hgemm_picks(template, workload, device) -> list[dict]:
    if template.family == "hgemm_wmma":
        return _hgemm_wmma_picks(template, workload, device)
    if template.family in ("hgemm_wgmma", "hgemm_wgmma_splitk", "hgemm_wgmma_cluster"):
        return _hgemm_wgmma_picks(template, workload, device)
    if template.family == "hgemm_stream":
        return _hgemm_stream_picks(template, workload, device)
    if template.family == "hgemm_wgmma_sched":
        return _hgemm_sched_picks(template, workload, device)
    if template.family == "hgemm_wgmma_swap":
        return _hgemm_swap_picks(template, workload, device)
    from autosched.templates.hgemm_mma import smem_bytes
    cfgs = template.space(workload, device).enumerate()
    tile = lambda c: c["bm"] * c["bn"]  # noqa: E731
    return [max(cfgs, key=lambda c: smem_bytes(c["bm"], c["bn"], c["bk"], c["stages"], c["pad"], workload.b_col,
                                               workload.a_col)),
            max(cfgs, key=tile), min(cfgs, key=tile)] + _default_and_random(template, workload, device)


def _hgemm_wmma_picks(template, workload, device) -> list[dict]:
    """The smallest block tile (the most blocks on the ragged edges), the most shared memory (the
    deepest ring, or the widest epilogue scratch), the largest warp tile (the most registers), the
    largest single-buffered block, then the default and two random ones; no config twice."""
    from autosched.templates.hgemm_wmma import smem_bytes
    cfgs = template.space(workload, device).enumerate()
    tile = lambda c: c["bm"] * c["bn"]  # noqa: E731
    smem = lambda c: smem_bytes(c["bm"], c["bn"], c["bk"], c["stages"], c["pad"], workload.a_col,  # noqa: E731
                                workload.b_col, workload.blocked, c["wm"], c["wn"])
    single = [c for c in cfgs if c["stages"] == 1] or cfgs
    picks = [min(cfgs, key=tile), max(cfgs, key=smem), max(cfgs, key=lambda c: (c["wm"] * c["wn"], tile(c))),
             max(single, key=tile)] + _default_and_random(template, workload, device)
    return _distinct(picks)


def _hgemm_stream_picks(template, workload, device) -> list[dict]:
    """The streaming template's corners: its deepest split (partials, counters, the last CTA's sum),
    the most shared memory, the most registers a thread, the most warps along K (the in-CTA sum),
    then the default and two random ones; none where it refuses the shape."""
    from autosched.templates.hgemm_stream import registers_needed, smem_bytes
    if template.refuses(workload) is not None:
        return []
    cfgs = template.space(workload, device).enumerate()
    smem = lambda c: smem_bytes(c["rw"], c["wn"], c["wk"], c["mt"], c["kw"], c["stages"])  # noqa: E731
    picks = [max(cfgs, key=lambda c: (c["split_k"], smem(c))), max(cfgs, key=smem),
             max(cfgs, key=lambda c: (registers_needed(c["rw"], c["mt"]), c["wn"] * c["wk"])),
             max(cfgs, key=lambda c: (c["wk"], c["kw"], c["split_k"]))]
    picks += _default_and_random(template, workload, device)
    return _distinct(picks)


def _hgemm_sched_picks(template, workload, device) -> list[dict]:
    """hgemm_wgmma_sched's corners, per schedule: the smallest tile with the shortest ring and 32-byte
    swizzle (the most CTAs, ping-pong: the most turns), the most shared memory (the deepest ring) with
    the box ring and, ping-pong, with a whole-share staging; where B is K-major, a 168-column tile (its
    unswizzled 56-column output boxes) of each schedule at its deepest ring; then the default and two random ones."""
    cfgs = template.space(workload, device).enumerate()
    picks = []
    for sched in ("pingpong", "cooperative"):
        mine = [c for c in cfgs if c["schedule"] == sched]
        for pool in ([c for c in mine if c["epi_boxes"]], [c for c in mine if not c["epi_boxes"]]):
            if pool:
                picks += [min(pool, key=lambda c: (c["bm"] * c["bn"], c["swizzle"], c["stages"])),
                          max(pool, key=lambda c: (template.smem(c), c["bm"] * c["bn"]))]
    for sched in ("pingpong", "cooperative"):
        odd = [c for c in cfgs if c["bn"] % 64 and c["schedule"] == sched]
        if odd:
            picks.append(max(odd, key=lambda c: (template.smem(c), c["bm"])))
    if cfgs:
        picks += _default_and_random(template, workload, device)
    return _distinct(picks)


def _hgemm_swap_picks(template, workload, device) -> list[dict]:
    """hgemm_wgmma_swap's corners: the smallest tile with the shortest ring and 32-byte swizzle (the
    most CTAs, the narrowest wgmma), the deepest K split of the widest tile (the most partials summed through the workspace), the same
    summed in a cluster (the most DSMEM reads), the most shared memory, two m64 blocks with the widest
    token tile (the most accumulators), a 64-byte swizzle whose ring ends off the staging's 1024-byte boundary
    (BW + BT no multiple of 16 rows), then the default and two random ones; none where the layout is
    not nt."""
    if template.refuses(workload) is not None:
        return []
    cfgs = template.space(workload, device).enumerate()
    if not cfgs:
        return []
    smem = template.smem
    deepest = lambda c: (c["split_k"], c["bw"] * c["bt"], -c["stages"])  # noqa: E731
    clustered = [c for c in cfgs if c["reduce"] == "cluster"]
    picks = [min(cfgs, key=lambda c: (c["bw"] * c["bt"], c["swizzle"], c["stages"], c["split_k"])),
             max((c for c in cfgs if c["reduce"] == "workspace"), key=deepest),
             *([max(clustered, key=deepest)] if clustered else []), max(cfgs, key=smem),
             max(cfgs, key=lambda c: (c["bw"], c["bt"], -c["stages"]))]
    odd = [c for c in cfgs if c["swizzle"] == 64 and (c["bw"] + c["bt"]) % 16 and c["stages"] % 2]
    if odd:
        picks.append(max(odd, key=smem))
    picks += _default_and_random(template, workload, device)
    return _distinct(picks)


def _hgemm_wgmma_picks(template, workload, device) -> list[dict]:
    """The wgmma template's corners: the most shared memory (deepest ring, largest tiles), the
    smallest tile with the shortest ring and 32-byte swizzle, one consumer with two m64 blocks, the
    default, then two random ones; none where the GPU has no wgmma or the shape no split (an empty
    space).  Of hgemm_wgmma_splitk, its deepest split on the smallest tile and on the most shared memory
    come first (so PER_TEMPLATE=2 keeps them); of hgemm_wgmma_cluster, pairs along M and along N on
    the smallest tile and on the most shared memory come before the rest."""
    from autosched.templates.hgemm_wgmma import m_blocks, smem_bytes
    cfgs = template.space(workload, device).enumerate()
    if not cfgs:
        return []
    smem = lambda c: smem_bytes(c["bm"], c["bn"], c["swizzle"], c["stages"])  # noqa: E731
    picks = [max(cfgs, key=smem), min(cfgs, key=lambda c: (c["bm"] * c["bn"], c["swizzle"], c["stages"])),
             max(cfgs, key=lambda c: (c["consumers"] == 1, m_blocks(c["bm"], c["consumers"]), c["bn"], -c["group"]))]
    picks += [c for c in _default_and_random(template, workload, device) if c not in picks]
    deepest = max((c.get("split_k", 1) for c in cfgs), default=1)
    split = [c for c in cfgs if deepest > 1 and c["split_k"] == deepest]
    if split:   # hgemm_wgmma_splitk: its deepest split first (partials, counters, the last CTA's sum)
        picks = [min(split, key=lambda c: (c["bm"] * c["bn"], c["swizzle"], c["stages"])), max(split, key=smem)] + picks
    pairs = [c for c in cfgs if "cluster_dim" in c]
    if pairs:   # hgemm_wgmma_cluster: pairs along M and N (multicast B, A) on the smallest tile (the
        #         most pairs, lone ones at the edges) and on the most shared memory (deepest ring) first
        small = lambda c: (c["bm"] * c["bn"], c["swizzle"], c["stages"])  # noqa: E731
        picks = [pick(p) for pick in (lambda p: min(p, key=small), lambda p: max(p, key=smem))
                 for p in ([c for c in pairs if c["cluster_dim"] == d] for d in ("m", "n")) if p] + picks
    return _distinct(picks)


def _distinct(picks: list[dict]) -> list[dict]:
    """`picks` with each config once, where it first comes (the pick functions list corners that may
    coincide on a small space)."""
    return [c for i, c in enumerate(picks) if c not in picks[:i]]


def _families() -> dict[str, Family]:
    from autosched.templates.gemv_dense import GemvDenseTemplate
    from autosched.templates.gemv_q4f16 import GemvQ4F16Template
    from autosched.templates.hgemm_mma import HgemmMmaTemplate
    from autosched.templates.hgemm_wmma import HgemmWmmaTemplate
    from autosched.templates.hgemm_wgmma import HgemmWgmmaTemplate
    from autosched.templates.hgemm_stream import HgemmStreamTemplate
    from autosched.templates.hgemm_wgmma_cluster import HgemmWgmmaClusterTemplate, cluster_enabled
    from autosched.templates.hgemm_wgmma_sched import HgemmWgmmaSchedTemplate, sched_enabled
    from autosched.templates.hgemm_wgmma_splitk import HgemmWgmmaSplitKTemplate, split_k_enabled
    from autosched.templates.hgemm_wgmma_swap import HgemmWgmmaSwapTemplate, swap_enabled
    from autosched.templates.sgemm import SgemmTemplate
    from autosched.workloads import GemvDense, GemvQ4F16, Hgemm, Sgemm
    from autosched.workloads.hgemm import DTYPES, LAYOUTS
    fams = [
        Family("gemv-q4f16", GemvQ4F16, (GemvQ4F16Template(),),
               "q4f16_1 dequantize-GEMV: y = dequant(W) v, W 4-bit with fp16 group scales",
               "NxK (e.g. 12288x4096)",
               benchmark="autosched.benchmarks.gemv_q4f16:run_benchmark",
               bench_help="tuned vs the same-bytes read floor, cuBLAS fp16 and torch int4",
               report="gemv-q4f16", report_title="q4f16_1 GEMV", report_section="autosched.report:gemv_section",
               sanitize_shapes=("264x4128", "4096x4096"), sanitize_picks=_gemv_picks,
               profile_baseline="autosched.benchmarks.gemv_q4f16:read_stream_for_profile"),
        # the decode engine's fp16 matmul (kernels/decode.cuh gemv_dense): tuned by tune-model
        # --formats fp16; no benchmark or report section of its own yet (the decode bench times it)
        Family("gemv-dense", GemvDense, (GemvDenseTemplate(),),
               "dense fp16 GEMV: y = W v, W (N, K) fp16, one warp a row (the decode engine's fp16 matmul)",
               "NxK (e.g. 2048x8192)", sanitize_shapes=("264x4128", "2048x8192"),
               sanitize_picks=_default_and_random),
        Family("sgemm", Sgemm, (SgemmTemplate(),),
               "FP32 GEMM C = A B (the warptiling SGEMM)", "MxNxK, with _ta for A stored transposed (e.g. 4096x4096x4096)",
               benchmark="autosched.benchmarks.gemm:run_benchmark", bench_kwargs={"op": "sgemm"},
               bench_help="tuned vs cuBLAS FP32 (TF32 off) on the same A, B and C (from the memory pool "
                          "the tuner measures in), and again on torch's caching-allocator memory",
               report="sgemm", report_title="SGEMM", report_section="autosched.report_sgemm:gemm_section",
               sanitize_shapes=("300x260x200", "300x260x200_ta"), sanitize_picks=_sgemm_picks,
               profile_baseline="autosched.benchmarks.gemm:cublas_for_profile"),
        # hgemm_mma first: its default serves every GPU since sm_80; hgemm_wmma (the seed's design,
        # every layout) and hgemm_wgmma (sm_90a) beside it, and hgemm_wgmma's split-K where its switch
        # is on (a candidate of tuning and selection, never the default: its space is empty on most shapes),
        # and hgemm_stream for the linear layer's few rows (M <= 256, nt): a candidate, never the default
        Family("hgemm", Hgemm, (HgemmMmaTemplate(), HgemmWmmaTemplate(), HgemmWgmmaTemplate(),
                                *([HgemmWgmmaSplitKTemplate()] if split_k_enabled() else []), HgemmStreamTemplate(),
                                *([HgemmWgmmaClusterTemplate()] if cluster_enabled() else []),
                                *([HgemmWgmmaSchedTemplate()] if sched_enabled() else []),
                                *([HgemmWgmmaSwapTemplate()] if swap_enabled() else [])),
               "FP16 or BF16 tensor-core GEMM, FP32 accumulation", "MxNxK, with _bt for B stored (N, K) "
               "(e.g. 4096x4096x4096 or 64x14336x4096_bt); or --layout, --dtype (or suffixes: "
               "4096x4096x4096_tn_bf16)",
               options=(Option("layout", LAYOUTS, "nn", "how A and B are stored: n row-major, t transposed "
                               "(first letter A, second B; nt is _bt), bb the 16x16-tiled blocked layout"),
                        Option("dtype", DTYPES, "fp16", "the inputs' and output's type (FP32 accumulation)")),
               benchmark="autosched.benchmarks.hgemm:run_benchmark", bench_trials=None,
               bench_help="every template tuned on its own (a share of --time-per-shape each, --split) vs "
                          "cuBLAS FP16 / BF16 through torch on issue 15's shapes (about 9 minutes on an H100)",
               report="hgemm", report_title="FP16 / BF16 tensor-core GEMM",
               report_section="autosched.report_sgemm:hgemm_section",
               sanitize_shapes=("300x264x200", "300x260x200_bt"), sanitize_picks=_hgemm_picks,
               profile_baseline="autosched.benchmarks.gemm:cublas_for_profile"),
    ]
    return {f.name: f for f in fams}


FAMILIES: dict[str, Family] = _families()
_BY_WORKLOAD = {f.workload.name: f for f in FAMILIES.values()}


def family(name: str) -> Family:
    """The family called `name` (its CLI name, or its workload's name), or ValueError naming them all."""
    f = FAMILIES.get(name) or _BY_WORKLOAD.get(name)
    if f is None:
        raise ValueError(f"unknown operator {name!r}; available: {', '.join(FAMILIES)}")
    return f


def options() -> dict[str, tuple[Option, list[str]]]:
    """Every option name any family takes -> (its first declaration, the families that take it),
    for the CLI to add each once."""
    out: dict[str, tuple[Option, list[str]]] = {}
    for f in FAMILIES.values():
        for o in f.options:
            out.setdefault(o.name, (o, []))[1].append(f.name)
    return out


def family_of(workload) -> Family:
    return family(workload.name)


def templates_for(workload) -> list[Template]:
    """Every template that can serve `workload`, in the registry's order (the first is the one whose
    rule-based default serves an untuned shape)."""
    fam = family_of(workload)
    ts = fam.templates_for(workload)
    if not ts:
        why = "; ".join(f"{t.family}: {t.refuses(workload)}" for t in fam.templates)
        raise WorkloadError(f"no template of {fam.name} accepts {workload.key} ({why})")
    return ts


def template_named(name: str) -> Template:
    for f in FAMILIES.values():
        for t in f.templates:
            if t.family == name:
                return t
    raise ValueError(f"unknown template {name!r}")
