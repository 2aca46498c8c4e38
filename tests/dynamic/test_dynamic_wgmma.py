"""DietCode with hgemm_wgmma as a sketch dimension, on the CPU (synthetic runner): sketches obey the
template's warpgroup rules, mutation keeps the consumer warpgroups, a mixed run selects and
dispatches both families, the JSON keeps them, ops serves them on the wgmma backend only, and the
.cu export encodes their maps per call."""

import dataclasses
import random

import pytest

from autosched.dynamic import sketch
from autosched.dynamic.cost_model import ProbeModel, features
from autosched.dynamic.export import export_cu
from autosched.dynamic.measurer import compile_report, probe_workloads
from autosched.dynamic.synthetic import SyntheticRunner
from autosched.dynamic.tune import DynamicResult, tune_dynamic
from autosched.dynamic.workload import DynamicWorkload
from autosched.ops.hgemm import HgemmDispatch
from autosched.templates.hgemm_dyn import HgemmDynTemplate
from autosched.templates.hgemm_wgmma import MAX_ACC, SMEM_CAP_SM90, HgemmWgmmaDynTemplate, m_blocks, smem_bytes
from autosched.templates import hgemm_wgmma as t_wg


@pytest.fixture(scope="module")
def dw():
    return DynamicWorkload.parse("hgemm", "Mx4096x4096_bt", (1, 4096))


@pytest.fixture(scope="module")
def mixed(h100, dw):
    return tune_dynamic(dw, [HgemmDynTemplate(), HgemmWgmmaDynTemplate()], SyntheticRunner(h100), None,
                        rounds=2, per_round=10, seed=3)


def test_wgmma_sketches_obey_the_template(h100, dw):
    t = HgemmWgmmaDynTemplate()
    space = t.space(dw.largest, h100)
    rng = random.Random(0)
    seen = set()
    for _ in range(200):
        c = t_wg.sample_wgmma(space, (dw.hi, dw.N), rng)
        mw = m_blocks(c["bm"], c["consumers"])
        assert c["bm"] == 64 * mw * c["consumers"] and mw in (1, 2)          # tiles bound to warpgroups
        assert c["bn"] in (64, 128, 192, 256) and mw * c["bn"] // 2 <= MAX_ACC
        assert smem_bytes(c["bm"], c["bn"], c["swizzle"], c["stages"]) <= SMEM_CAP_SM90
        assert t_wg.wgmma_unroll(c) == mw * c["swizzle"] // 32                # derived, never drawn
        assert space.contains(c)
        t.render(dw.at(1), c, h100)                      # valid for every M: no rule reads M
        seen.add((c["consumers"], mw, c["bn"]))
        m = t_wg.mutate_wgmma(space, c, rng, (dw.hi, dw.N))
        if m is not None:
            assert m["consumers"] == c["consumers"] and space.contains(m) and m != c
    assert len(seen) >= 8
    # a short range caps BM: no tile taller than the largest M needs (beyond one m64 block a consumer)
    small = t_wg.sample_wgmma(space, (64, dw.N), random.Random(1))
    assert small["bm"] <= 64 * small["consumers"]


def test_the_template_is_a_sketch_dimension(h100, dw):
    spaces = {"hgemm_dyn": HgemmDynTemplate().space(dw.largest, h100),
              "hgemm_wgmma": HgemmWgmmaDynTemplate().space(dw.largest, h100)}
    rng = random.Random(5)
    fams = [sketch.sample_any(spaces, (dw.hi, dw.N), rng)[0] for _ in range(60)]
    assert set(fams) == set(spaces)
    only = {"hgemm_dyn": spaces["hgemm_dyn"]}
    assert {sketch.sample_any(only, (dw.hi, dw.N), rng)[0] for _ in range(10)} == {"hgemm_dyn"}


def test_compile_report_probes_and_features_of_a_wgmma_kernel(h100, dw):
    t = HgemmWgmmaDynTemplate()
    c = {"bm": 128, "bn": 256, "consumers": 2, "swizzle": 128, "stages": 3, "group": 8}
    rep = compile_report(t, c, dw.largest, h100)
    assert rep.threads == 384 and rep.blocks_per_sm == 1 and rep.smem_bytes == smem_bytes(128, 256, 128, 3)
    probes = probe_workloads(c, rep, dw, h100)
    assert list(probes) == [h100.sm_count]             # persistent: one CTA an SM, one probe grid
    w = probes[h100.sm_count]
    assert -(-w.M // 128) * -(-w.N // 256) == h100.sm_count and w.K == dw.K
    pm = ProbeModel(dw, h100, [HgemmDynTemplate(), t])
    mk = pm.guess(c, "hgemm_wgmma")
    assert mk.family == "hgemm_wgmma" and mk.ok
    f_wg = features(mk, 300, dw.N, h100.sm_count)
    dyn_cfg = HgemmDynTemplate().default_config(dw.largest, h100)
    f_dyn = features(pm.guess(dyn_cfg, "hgemm_dyn"), 300, dw.N, h100.sm_count)
    assert len(f_wg) == len(f_dyn) and f_wg[-1] == 1.0 and f_dyn[-1] == 0.0


def test_a_mixed_run_selects_verifies_and_dispatches_both(h100, dw, mixed, tmp_path):
    res = mixed
    fams = {k.family for k in res.kernels}
    assert "hgemm_wgmma" in fams                       # the modelled wgmma is faster at large M
    assert res.template == "hgemm_dyn+hgemm_wgmma"
    assert res.dispatcher.families == [k.family for k in res.kernels]
    assert all(v["status"] == "ok" for v in res.verification)
    templates = {"hgemm_dyn": HgemmDynTemplate(), "hgemm_wgmma": HgemmWgmmaDynTemplate()}
    for M in (1, 100, 2048, 4096):
        spec = res.dispatcher.spec(dw.at(M), templates, h100)
        assert spec.family == res.dispatcher.family(M)
    back = DynamicResult.from_json(res.to_json())
    assert [k.family for k in back.kernels] == [k.family for k in res.kernels]
    assert back.dispatcher.families == res.dispatcher.families
    served = dataclasses.replace(res, runner="gpu")
    g = HgemmDispatch(4096, 4096, h100, result=served, backend="wgmma")
    assert g.families[:len(res.kernels)] == [k.family for k in res.kernels]
    assert all(g.index(M) == res.dispatcher(M) and g.source(M) == "dispatched" for M in (1, 300, 4096))
    assert "DietCode dispatch over M in 1..4096" in g.describe() and "hgemm_wgmma" in g.describe()
    g_mma = HgemmDispatch(4096, 4096, h100, result=served, backend="mma")
    assert g_mma.result is None and g_mma.source(300) == "default"
    assert "which backend mma does not launch" in g_mma.describe()


def test_a_mixed_run_exports_with_its_maps_encoded_per_call(h100, dw, mixed, tmp_path):
    """The .cu of a hgemm_dyn + hgemm_wgmma result: hgemm_wgmma.cuh under __CUDACC__, each wgmma
    micro-kernel's three maps encoded by the driver over the call's A, B, C and passed by value; its
    host part, compiled by a plain C++ compiler, dispatches as the Python dispatcher does."""
    import shutil
    import subprocess
    res = mixed
    text = export_cu(res, tmp_path / "k.cu", h100).read_text()
    wg = [(i, k.config) for i, k in enumerate(res.kernels) if k.family == "hgemm_wgmma"]
    cuda_part = text[text.index("#ifdef __CUDACC__"):]
    assert "namespace autosched_wgmma" in cuda_part and "namespace autosched_tma" in cuda_part
    assert "#include <cuda.h>" in cuda_part
    assert "nvcc -gencode arch=compute_90a,code=sm_90a" in text and "-lcuda" in text
    for i, c in wg:
        expr = HgemmWgmmaDynTemplate().render(dw.at(4096), c, h100).name_expression
        case = text[text.index(f"    case {i}: {{   // hgemm_wgmma"):]
        case = case[:case.index("break;")]
        assert f"{expr}<<<" in case and "(ma, mb, mc, M, 4096, 4096)" in case
        enc = "autosched_tma::encode_map(&{}, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, {}"
        # A's box follows M (HgemmWgmma::a_rows: M rounded up to 16 below BM)
        a_rows = f"(M < {c['bm']} ? (M + 15) / 16 * 16 : {c['bm']})"
        assert enc.format("ma", "A") + f", 4096, M, 8192, 64, {a_rows}," in case
        assert enc.format("mb", "B") + f", 4096, 4096, 8192, 64, {c['bn']}," in case
        assert enc.format("mc", "C") + ", 4096, M, 8192, 64, 64, CU_TENSOR_MAP_SWIZZLE_128B)" in case
        assert f"((M + {c['bm'] - 1}) / {c['bm']}) * {-(-4096 // c['bn'])} * 1;" in case   # work units
    cxx = shutil.which("c++") or shutil.which("g++") or shutil.which("clang++")
    if cxx is None:
        pytest.skip("no C++ compiler")
    main_cc = tmp_path / "main.cc"
    main_cc.write_text(f'#include "{tmp_path / "k.cu"}"\n#include <cstdio>\n'
                       'int main() { for (int m = 1; m <= 4096; m += 7) '
                       'std::printf("%d\\n", autosched_hgemm_dyn_4096x4096_nt_dispatch(m)); }\n')
    exe = tmp_path / "dispatch"
    subprocess.run([cxx, "-x", "c++", "-std=c++17", "-Wall", "-Werror", "-o", str(exe), str(main_cc)], check=True,
                   capture_output=True, text=True)
    got = [int(x) for x in subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout.split()]
    assert got == [res.dispatcher(m) for m in range(1, 4097, 7)]


def test_a_dyn_only_run_is_unchanged_and_exports(h100, tmp_path):
    dw = DynamicWorkload.parse("hgemm", "Mx768x768_bt", (16, 2048), step=16)
    res = tune_dynamic(dw, HgemmDynTemplate(), SyntheticRunner(h100), None, rounds=1, per_round=6, seed=2)
    assert {k.family for k in res.kernels} == {"hgemm_dyn"} and res.template == "hgemm_dyn"
    assert export_cu(res, tmp_path / "k.cu", h100).exists()


def test_front_templates_option(h100):
    from autosched.api import AutoschedError
    from autosched.dynamic.front import tune_dynamic as front
    dw = DynamicWorkload.parse("hgemm", "Mx768x768_bt", (16, 256), step=16)
    with pytest.raises(AutoschedError, match="templates must be among hgemm_dyn, hgemm_wgmma"):
        front(dw, runner="synthetic", db=":memory:", templates=["hgemm_mma"])
