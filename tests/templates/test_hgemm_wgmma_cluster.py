"""Clusters of 2 with TMA multicast for the wgmma GEMM (kernels/hgemm_wgmma_cluster.cuh), a template
of its own (templates/hgemm_wgmma_cluster.py): the switch adds it to the hgemm family and leaves
hgemm_wgmma as it was; its space is hgemm_wgmma's with cluster_dim and the pairing rule; the
rendered kernel (name, grid in pairs, cluster shape, half-slot tensor-map boxes), features, build
id, sanitizer picks, the static_asserts agreeing with the Python rules, NVRTC builds without spills
or serialized wgmma, the CTA-scope slot releases; the exported launcher asks for the clusters."""

import dataclasses
import hashlib
import random

import pytest

import autosched.templates.hgemm_wgmma as hw
import autosched.templates.hgemm_wgmma_cluster as hc
from autosched import knobs
from autosched.build import compile_spec
from autosched.identity import build_id, source_id
from autosched.registry import family
from autosched.templates import HgemmWgmmaClusterTemplate, HgemmWgmmaSplitKTemplate, HgemmWgmmaTemplate
from autosched.templates.base import kernel_source
from autosched.templates.hgemm_wgmma_cluster import cluster_l2_bytes_saved, cluster_pairs
from autosched.workloads import Hgemm

from .wgmma_builds import assert_wgmma_builds_clean

BIG = "4096x4096x4096_bt"
C128 = {"bm": 128, "bn": 256, "consumers": 2, "swizzle": 128, "stages": 3, "group": 8}


@pytest.fixture
def on():
    return HgemmWgmmaClusterTemplate()


def key(c):
    return tuple(sorted(c.items()))


def _families(monkeypatch, value):
    import autosched.registry as registry
    monkeypatch.setenv("AUTOSCHED_WGMMA_CLUSTER", value)
    return [t.family for t in registry._families()["hgemm"].templates]


def test_switch_reads_the_constant_and_the_environment(monkeypatch):
    monkeypatch.delenv("AUTOSCHED_WGMMA_CLUSTER", raising=False)
    assert hc.cluster_enabled() is knobs.WGMMA_CLUSTER.default
    for value, want in [("1", True), ("0", False), ("", False), ("yes", True), ("no", False)]:
        monkeypatch.setenv("AUTOSCHED_WGMMA_CLUSTER", value)
        assert hc.cluster_enabled() is want


def test_switch_adds_the_template_and_leaves_hgemm_wgmma_alone(monkeypatch, h100):
    assert "hgemm_wgmma_cluster" not in _families(monkeypatch, "0")
    assert "hgemm_wgmma_cluster" in _families(monkeypatch, "1")
    t = HgemmWgmmaTemplate()
    w = Hgemm.from_shape(BIG)
    assert "cluster_dim" not in t.space(w, h100).names
    spec = t.render(w, t.default_config(w, h100), h100)
    assert spec.source == kernel_source("hgemm_wgmma.cuh") and spec.cluster is None
    assert t.source_hash() == hashlib.sha256(kernel_source("hgemm_wgmma.cuh").encode()).hexdigest()
    assert "cluster_n" not in t.derived_features(t.default_config(w, h100), w.params, h100)


@pytest.mark.parametrize("shape", [BIG, "1000x1032x504_nn", "296x264x200_tn_bf16"])
def test_space_is_hgemm_wgmmas_with_a_pair_direction(on, h100, shape):
    """Every config of hgemm_wgmma whose tiles pair along M (or N) is a config here with cluster_dim
    m (n); nothing else is."""
    w = Hgemm.from_shape(shape)
    base = hw.HgemmWgmmaTemplate().space(w, h100).enumerate()
    mine = on.space(w, h100).enumerate()
    assert on.space(w, h100).names == [*hw.HgemmWgmmaTemplate().space(w, h100).names, "cluster_dim"]
    along = lambda c, d: -(-w.M // c["bm"]) if d == "m" else -(-w.N // c["bn"])  # noqa: E731
    want = [{**c, "cluster_dim": d} for c in base for d in hc.CLUSTER_DIMS if along(c, d) >= 2]
    assert sorted(map(key, mine)) == sorted(map(key, want))
    d = on.default_config(w, h100)
    assert on.space(w, h100).contains(d) and on.default_on(h100) is False


def test_rules_name_what_they_refuse(on, h100):
    space = on.space(Hgemm.from_shape(BIG), h100)
    assert space.contains({**C128, "cluster_dim": "m"}) and space.contains({**C128, "cluster_dim": "n"})
    assert any("not one of" in v for v in space.violations({**C128, "cluster_dim": "k"}))
    assert any("unknown knobs" in v for v in space.violations({**C128, "cluster": 2, "cluster_dim": "m"}))
    # 128 rows in tiles of 128: one tile along M, nothing to pair with; along N there are 16
    thin = on.space(Hgemm.from_shape("128x4096x4096_bt"), h100)
    assert any("at least 2 tiles along the cluster dim" in v
               for v in thin.violations({**C128, "group": 1, "cluster_dim": "m"}))
    assert thin.contains({**C128, "group": 1, "cluster_dim": "n"})
    one = on.space(Hgemm.from_shape("128x256x64_bt"), h100)
    assert [c for c in one if c["bm"] >= 128 and c["bn"] == 256] == []


def test_split_k_is_never_in_a_cluster(h100):
    """Split-K is a template of its own whose work units are not paired: no cluster knob, no cluster
    attribute, its build id its own header's."""
    w = Hgemm.from_shape("128x4096x4096_bt")
    sk = HgemmWgmmaSplitKTemplate()
    space = sk.space(w, h100)
    assert space.names[-2:] == ["group", "split_k"] and space.size() > 0
    assert not any("cluster_dim" in c for c in space) and sk.render(w, sk.default_config(w, h100), h100).cluster is None
    assert sk.source_hash() == hashlib.sha256(kernel_source("hgemm_wgmma_splitk.cuh").encode()).hexdigest()


@pytest.mark.parametrize("shape", [BIG, "300x264x200", "136x264x4104_bt", "296x1032x200_tt_bf16"])
def test_every_accepted_pair_config_launches_whole_clusters(on, h100, shape):
    w = Hgemm.from_shape(shape)
    cfgs = on.space(w, h100).enumerate()
    assert {c["cluster_dim"] for c in cfgs} == {"m", "n"}
    for c in random.Random(3).sample(cfgs, min(40, len(cfgs))):
        tiles_along = -(-w.M // c["bm"]) if c["cluster_dim"] == "m" else -(-w.N // c["bn"])
        assert tiles_along >= 2
        spec = on.render(w, c, h100)
        assert spec.cluster == (2, 1, 1) and spec.grid[0] % 2 == 0 and 2 <= spec.grid[0] <= h100.sm_count
        units, full = cluster_pairs(w.M, w.N, c["bm"], c["bn"], c["cluster_dim"])
        assert spec.grid[0] == 2 * min(units, h100.sm_count // 2) and full >= 1


def test_render_of_a_pair_along_m_multicasts_b(on, h100):
    w = Hgemm.from_shape(BIG)                               # nt: A (M, K) and B (N, K), both K-major
    spec = on.render(w, {**C128, "cluster_dim": "m"}, h100)
    assert spec.family == "hgemm_wgmma_cluster"
    assert spec.name_expression == "hgemm_wgmma_cluster<0, 0, 0, 128, 256, 128, 3, 2, 8, 2, 0>"
    assert spec.source == kernel_source("hgemm_wgmma_cluster.cuh")
    assert spec.source.count(kernel_source("hgemm_wgmma.cuh")) == 1       # the base inlined, once
    assert spec.grid == (132, 1, 1) and spec.cluster == (2, 1, 1)
    boxes = [a.params()["box"] for a in spec.args[:3]]
    assert boxes == [(64, 128), (64, 128), (64, 64)]        # B's 256 rows in halves of 128; A whole
    assert [a.role for a in spec.args] == ["tensormap"] * 3 + ["scalar"] * 3


def test_render_of_a_pair_along_n_multicasts_a(on, h100):
    w = Hgemm.from_shape("4096x4096x4096_tn")               # A (K, M) and B (K, N): both MN-major
    spec = on.render(w, {**C128, "cluster_dim": "n"}, h100)
    assert spec.name_expression == "hgemm_wgmma_cluster<0, 1, 1, 128, 256, 128, 3, 2, 8, 2, 1>"
    boxes = [a.params()["box"] for a in spec.args[:3]]
    assert boxes == [(64, 32), (64, 64), (64, 64)]          # A's chunks: half the k rows each
    small = on.render(Hgemm.from_shape("300x264x200"), {"bm": 64, "bn": 64, "consumers": 1, "swizzle": 32,
                                                         "stages": 2, "group": 1, "cluster_dim": "n"}, h100)
    assert small.grid == (2 * 3 * 5, 1, 1)                  # 5 tiles along N: 3 pairs (one lone) x 5 rows
    assert [a.params()["box"] for a in small.args[:2]] == [(16, 32), (16, 16)]   # nn: A halved, B MN-major whole


def test_features_carry_the_pair_and_its_l2_saving(on, h100):
    w = Hgemm.from_shape(BIG)
    p = w.params
    plain = HgemmWgmmaTemplate().derived_features(C128, p, h100)
    f = on.derived_features({**C128, "cluster_dim": "m"}, p, h100)
    assert {k: v for k, v in f.items() if k not in ("waves", "cluster_n", "l2_bytes_saved")} == \
        {k: v for k, v in plain.items() if k != "waves"}
    # 32 x 16 tiles: 16 pairs along M per tile column; each saves a 256 x 4096 B slot of 2 bytes
    assert f["l2_bytes_saved"] == 16 * 16 * 256 * 4096 * 2 == cluster_l2_bytes_saved(4096, 4096, 4096, 128, 256, 128, "m")
    assert f["cluster_n"] == 0 and f["waves"] == 512 / 132
    g = on.derived_features({**C128, "cluster_dim": "n"}, p, h100)
    assert g["cluster_n"] == 1 and g["l2_bytes_saved"] == 32 * 8 * 128 * 4096 * 2
    from autosched.search.cost_model import Featurizer
    fz = Featurizer(on.space(w, h100), w.params, lambda c, q: on.derived_features(c, q, h100))
    assert fz.matrix([{**C128, "cluster_dim": "m"}, {**C128, "cluster_dim": "n"}]).shape[0] == 2
    # odd tiles along the pair: the lone pair saves nothing, and counts as two CTAs of work
    assert cluster_pairs(300, 264, 64, 64, "m") == (3 * 5, 2 * 5)
    assert cluster_l2_bytes_saved(300, 264, 200, 64, 64, 32, "m") == 10 * 64 * 208 * 2


def test_build_id_is_the_cluster_sources(on, h100):
    base = HgemmWgmmaTemplate().source_hash()
    assert on.source_hash() == hashlib.sha256(kernel_source("hgemm_wgmma_cluster.cuh").encode()).hexdigest() != base
    assert source_id(on).split("/")[0] == on.source_hash()[:12] and build_id(on) != build_id(HgemmWgmmaTemplate())
    assert "cluster_dim" not in hw.HgemmWgmmaDynTemplate().space(Hgemm.from_shape(BIG), h100).names


def test_slot_releases_are_cta_scope():
    """The consumers read a slot only through wgmma, retired by wait_group before they release it:
    cluster-scope release and acquire ordered nothing more and cost 1.5-3x (H100, 2026-11-26)."""
    src = kernel_source("hgemm_wgmma_cluster.cuh")
    code = "\n".join(line.split("//")[0] for line in src.splitlines())
    assert "mbarrier.arrive.shared::cluster.b64" in code
    assert "release.cluster.shared::cluster" not in code and "acquire.cluster" not in code


def test_sanitizer_picks_put_pairs_along_m_and_n_first(on, h100):
    w = Hgemm.from_shape("300x264x200")
    picks = family("hgemm").sanitize_picks(on, w, h100)
    space = on.space(w, h100)
    assert all(space.contains(c) for c in picks)
    assert [c["cluster_dim"] for c in picks[:4]] == ["m", "n", "m", "n"]
    assert len({key(c) for c in picks}) == len(picks)
    assert hw.smem_bytes(**{k: picks[2][k] for k in ("bm", "bn", "swizzle", "stages")}) > \
        hw.smem_bytes(**{k: picks[0][k] for k in ("bm", "bn", "swizzle", "stages")})


def test_export_launches_pairs_with_the_cluster_attribute(on, h100, tmp_path):
    """<<<>>> cannot ask for clusters: the exported launcher uses cudaLaunchKernelEx with the cluster
    dimension (built and run on the GPU by tests/gpu/test_export_gpu.py)."""
    from autosched.cuda_export import export_cuda
    w = Hgemm.from_shape("300x264x200_bt")
    c = {"bm": 64, "bn": 64, "consumers": 1, "swizzle": 128, "stages": 4, "group": 1, "cluster_dim": "n"}
    spec = on.render(w, c, h100)
    text = export_cuda(w, on, c, h100, tmp_path / "k.cu").read_text()
    assert "<<<" not in text.split('extern "C"')[1]
    launch = f"cudaLaunchKernelEx(&config, {spec.name_expression}, map_A, map_B, map_C, M, N, K);"
    assert launch in text and "cluster[0].id = cudaLaunchAttributeClusterDimension;" in text
    assert "cluster[0].val.clusterDim.x = 2;" in text and f"config.gridDim = dim3{spec.grid};" in text
    assert f"config.dynamicSmemBytes = {spec.smem_bytes};" in text and "thread-block clusters of (2, 1, 1)" in text
    # a kernel without clusters keeps <<<>>>
    lone = HgemmWgmmaTemplate()
    plain = export_cuda(w, lone, lone.default_config(w, h100), h100, tmp_path / "p.cu").read_text()
    assert "cudaLaunchKernelEx" not in plain and "<<<dim3" in plain


# -- NVRTC -----------------------------------------------------------------------------------

def _static_assert_fails(spec, expr):
    b = compile_spec(dataclasses.replace(spec, name_expression=expr))
    return (not b.ok) and "static assertion failed" in b.log


def test_static_assert_agrees_with_the_knobs(on, h100):
    """CLUSTER 2 with CDIM 0 (m) or 1 (n) compiles; other cluster sizes (1 is hgemm_wgmma) and any
    other CDIM do not."""
    w = Hgemm.from_shape("1000x1032x504_nn")
    c = {"bm": 64, "bn": 64, "consumers": 1, "swizzle": 32, "stages": 2, "group": 1, "cluster_dim": "m"}
    spec = on.render(w, c, h100)
    stem = spec.name_expression.rsplit(",", 2)[0]
    space = on.space(w, h100)
    for size, dim in [(1, 0), (2, 0), (2, 1), (3, 0), (4, 1), (2, 2), (2, -1)]:
        renders_cluster_kernel = (size == hc.CLUSTER and 0 <= dim < len(hc.CLUSTER_DIMS)
                                  and space.contains({**c, "cluster_dim": hc.CLUSTER_DIMS[dim]}))
        fails = _static_assert_fails(spec, f"{stem}, {size}, {dim}>")
        assert renders_cluster_kernel != fails, (size, dim, renders_cluster_kernel, fails)


def test_pair_configs_compile_for_sm90a_without_spills(on, h100, tmp_path):
    rng = random.Random(5)
    specs = []
    for shape in [BIG, "4096x4096x4096", "296x264x200_tn_bf16", "296x264x200_tt", "136x264x4104_bt"]:
        w = Hgemm.from_shape(shape)
        for dim in ("m", "n"):
            cfgs = [c for c in on.space(w, h100) if c["cluster_dim"] == dim]
            smem = lambda c: hw.smem_bytes(c["bm"], c["bn"], c["swizzle"], c["stages"])  # noqa: E731
            picks = [max(cfgs, key=smem), max(cfgs, key=lambda c: (hw.m_blocks(c["bm"], c["consumers"]) * c["bn"],
                                                                   c["consumers"] == 1))]
            picks += rng.sample(cfgs, 1)
            specs += [on.render(w, c, h100) for c in picks]
    names = {s.name_expression for s in specs}
    assert {n.rsplit(",", 1)[1] for n in names} == {" 0>", " 1>"}
    assert_wgmma_builds_clean(specs, tmp_path, h100)
