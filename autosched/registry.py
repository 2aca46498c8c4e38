"""The registry of operator families: one entry per family, which everything else iterates over.

A family names a workload (its class), the templates that may serve it (each may refuse a given
workload: `Template.refuses`), the shape syntax users type, its benchmark and report section, and
the configs a compute-sanitizer run picks.  The CLI, `autosched bench`, `autosched report`, the
sanitizer and ncu scripts read it; adding a family is its workload, its template module, its .cuh
and one entry in FAMILIES below.
"""

from __future__ import annotations

import importlib
import random
from dataclasses import dataclass, field
from typing import Callable

from autosched.device import STATIC_SMEM_LIMIT
from autosched.templates.base import Template, default_and_random
from autosched.templates.gemv_dense import GemvDenseTemplate
from autosched.templates.gemv_q4f16 import GemvQ4F16Template, extreme_configs
from autosched.templates.hgemm_mma import HgemmMmaTemplate
from autosched.templates.hgemm_stream import HgemmStreamTemplate
from autosched.templates.hgemm_wgmma import HgemmWgmmaTemplate
from autosched.templates.hgemm_wgmma_cluster import HgemmWgmmaClusterTemplate, cluster_enabled
from autosched.templates.hgemm_wgmma_sched import HgemmWgmmaSchedTemplate, sched_enabled
from autosched.templates.hgemm_wgmma_splitk import HgemmWgmmaSplitKTemplate, split_k_enabled
from autosched.templates.hgemm_wgmma_swap import HgemmWgmmaSwapTemplate, swap_enabled
from autosched.templates.hgemm_wmma import HgemmWmmaTemplate
from autosched.templates.sgemm import SgemmTemplate, dynamic_smem
from autosched.workloads import GemvDense, GemvQ4F16, Hgemm, Sgemm
from autosched.workloads.base import Workload, WorkloadError
from autosched.workloads.hgemm import DTYPES, LAYOUTS


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
    module, _, fn = path.partition(":")
    return getattr(importlib.import_module(module), fn)


def _template_picks(template, workload, device) -> list[dict]:
    """The template's own picks (its sanitizer_picks: a family of several templates asks each)."""
    return template.sanitizer_picks(workload, device)


def _gemv_picks(template, workload, device) -> list[dict]:
    return extreme_configs(template.space(workload, device).enumerate())


def _sgemm_picks(template, workload, device, n: int = 4) -> list[dict]:
    """The configs staging the most dynamic shared memory over the 48 KB every launch gets (the
    opt-in path), then two random ones of those."""
    big = sorted((c for c in template.space(workload, device) if dynamic_smem(c) > STATIC_SMEM_LIMIT),
                 key=lambda c: -dynamic_smem(c))
    return big[:n - 2] + random.Random(2).sample(big, min(2, len(big)))


def _families() -> dict[str, Family]:
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
               sanitize_picks=default_and_random),
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
               sanitize_shapes=("300x264x200", "300x260x200_bt"), sanitize_picks=_template_picks,
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
