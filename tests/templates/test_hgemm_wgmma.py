"""The wgmma + TMA GEMM template (sm_90a): its space and rules, the TMA maps it asks for, what it
refuses (layouts, GPUs), and NVRTC builds of corner and sampled configs with no spills, the
register count setmaxnreg relies on and wgmma in the code."""

import dataclasses
import random
import re
import shutil
import subprocess

import pytest

from autosched.registry import family, templates_for
from autosched.runtime import tensormap_request
from autosched.space import config_hash
from autosched.templates import HgemmWgmmaTemplate
from autosched.templates.hgemm_wgmma import MAX_ACC, m_blocks, smem_bytes
from autosched.workloads import Hgemm, WorkloadError

from .wgmma_builds import assert_wgmma_builds_clean

LAYOUTS = ("nn", "nt", "tn", "tt")


@pytest.fixture(scope="module")
def t():
    return HgemmWgmmaTemplate()


def _cuh_constant(name: str) -> str:
    from autosched.templates.base import kernel_source
    m = re.search(rf"static constexpr int {name} = ([^;]+);", kernel_source("hgemm_wgmma.cuh"))
    return m.group(1)


def test_space_rules_and_default(t, h100):
    w = Hgemm.from_shape("4096x4096x4096_bt")
    cfgs = t.space(w, h100).enumerate()
    assert 100 < len(cfgs) < 2000
    for c in cfgs:
        mw = m_blocks(c["bm"], c["consumers"])
        assert mw in (1, 2) and mw * c["bn"] // 2 <= MAX_ACC
        assert smem_bytes(c["bm"], c["bn"], c["swizzle"], c["stages"]) <= h100.smem_per_block_optin
    d = t.default_config(w, h100)
    assert d == {"bm": 128, "bn": 256, "consumers": 2, "swizzle": 128, "stages": 3, "group": 8}
    spec = t.render(w, d, h100)
    assert spec.name_expression == "hgemm_wgmma<0, 0, 0, 128, 256, 128, 3, 2, 8>"
    assert spec.arch == "sm_90a" and spec.block == (384, 1, 1)
    assert spec.grid == (132, 1, 1)                       # persistent: 32 x 16 tiles over 132 SMs
    assert spec.smem_bytes == 3 * (128 + 256) * 128 + 128 * 256 * 2 + 48 + 1024
    # the .cuh's SMEM_BYTES is the same formula
    assert "STAGES * STAGE_BYTES + C_BYTES" in _cuh_constant("BAR_OFFSET")
    # a small problem: fewer tiles than SMs, a grid of exactly the tiles
    small = Hgemm.from_shape("300x264x200")
    s = t.render(small, t.default_config(small, h100), h100)
    c = dict(s.config)
    assert s.grid[0] == -(-300 // c["bm"]) * -(-264 // c["bn"])


def test_rules_prune_what_the_kernel_rejects(t, h100):
    space = t.space(Hgemm.from_shape("4096x4096x4096"), h100)
    base = {"bm": 128, "bn": 128, "consumers": 2, "swizzle": 128, "stages": 4, "group": 8}
    assert space.contains(base)
    for bad, words in [({"bm": 64, "consumers": 2}, "BM = 64 x consumers"),
                       ({"bm": 256, "consumers": 1}, "BM = 64 x consumers"),
                       ({"bm": 128, "consumers": 1, "bn": 256}, "accumulators"),
                       ({"bn": 256, "bm": 256, "stages": 6}, "shared memory")]:
        v = space.violations({**base, **bad})
        assert any(words in x for x in v), (bad, v)


@pytest.mark.parametrize("M, bm, groups", [(64, 64, {1}), (128, 64, {1, 4}), (192, 64, {1, 4}),
                                            (256, 64, {1, 4}), (320, 64, {1, 4, 8}), (128, 128, {1}),
                                            (256, 128, {1, 4})])
def test_raster_groups_past_the_tile_rows_are_one_order_but_pairing_is_kept(t, h100, M, bm, groups):
    # groups at or past M's tile rows walk one order, so one of them is searched; at two tile rows
    # that one is 4 (there is no 2), which pairs the CTAs that read one B tile (H100: 64x64 s12 on
    # 128x4096x4096_bt, group 1 25.3 us, group 4 22.1)
    space = t.space(Hgemm.from_shape(f"{M}x4096x4096_bt"), h100)
    got = {c["group"] for c in space.enumerate() if c["bm"] == bm}
    assert got == groups


def test_default_is_the_ladder_that_ops_serves(t, h100):
    # few tile rows: the ladder's 64-row tile with a deep ring, keeping a pairing raster group (the
    # space's nearest point alone would take group 1); where the tiles fill the GPU, 128 x 256
    from autosched.templates.hgemm_ladder import WG, ladder_rungs
    for shape, want in [("128x4096x4096_bt", {"bm": 64, "bn": 64, "stages": 12, "group": 4}),
                        ("512x11008x4096_bt", {"bm": 128, "bn": 128, "stages": 6, "group": 4}),
                        ("4096x4096x4096", {"bm": 128, "bn": 256, "stages": 3, "group": 8})]:
        w = Hgemm.from_shape(shape)
        d = t.default_config(w, h100)
        assert {k: d[k] for k in want} == want, shape
        assert d == ladder_rungs(WG, t.space(w, h100), w.N, w.M, h100.sm_count)[-1][1]


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_tensormaps_describe_the_stored_operands(t, h100, layout, dtype):
    w = Hgemm.from_shape("296x264x200", layout=layout, dtype=dtype)      # M % 8: A may be stored (K, M)
    cfg = {"bm": 128, "bn": 192, "consumers": 2, "swizzle": 64, "stages": 3, "group": 4}
    spec = t.render(w, cfg, h100)
    maps = {a.name: a.params() for a in spec.args if a.role == "tensormap"}
    assert [a.name for a in spec.args] == ["A", "B", "C", "M", "N", "K"]
    assert spec.name_expression.startswith(f"hgemm_wgmma<{int(dtype == 'bf16')}, {int(layout[0] == 't')}, "
                                           f"{int(layout[1] == 'n')}, 128, 192, 64, 3, 2, 4>")
    a, b, c = maps["A"], maps["B"], maps["C"]
    bk = 32
    # A: (M, K) row-major has rows of K; stored (K, M) rows of M, read in (BK x BK) boxes
    assert (a["dims"], a["strides"], a["box"]) == (((200, 296), (400,), (bk, 128)) if layout[0] == "n"
                                                   else ((296, 200), (592,), (bk, bk)))
    assert (b["dims"], b["strides"], b["box"]) == (((264, 200), (528,), (bk, bk)) if layout[1] == "n"
                                                   else ((200, 264), (400,), (bk, 192)))
    assert (c["dims"], c["strides"], c["box"], c["swizzle"], c["of"]) == ((264, 296), (528,), (64, 64), 128, "output")
    for m in (a, b):
        assert m["swizzle"] == 64 and m["of"] == "input" and m["dtype"] == dtype
    # every map passes the driver's rules as runtime checks them (the encoding itself needs a driver)
    for m in maps.values():
        r = tensormap_request(m, 0x7F0000000000)
        assert r["rank"] == 2 and r["element_strides"] == [1, 1]
        assert r["dtype"] == ("CU_TENSOR_MAP_DATA_TYPE_BFLOAT16" if dtype == "bf16" else "CU_TENSOR_MAP_DATA_TYPE_FLOAT16")
        assert r["oob_fill"] == "CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE"       # zeros past the edges


def test_expect_tx_bytes_equal_the_boxes_loaded(t, h100):
    """Each full barrier expects STAGE_BYTES = (BM + BN) x SWZ: the sum of the boxes the producer
    issues per slot, whichever major-ness each operand has."""
    for layout in LAYOUTS:
        w = Hgemm.from_shape("1000x1032x504", layout=layout)
        for c in random.Random(3).sample(t.space(w, h100).enumerate(), 20):
            maps = {a.name: a.params() for a in t.render(w, c, h100).args if a.role == "tensormap"}
            # K-major operands (A of n*, B of *t) come in one box of BK x rows, MN-major ones in
            # rows / BK boxes of BK x BK (the producer's loops)
            k_major = {"A": layout[0] == "n", "B": layout[1] == "t"}
            rows = {"A": c["bm"], "B": c["bn"]}
            total = 0
            for name in "AB":
                box = maps[name]["box"]
                boxes = 1 if k_major[name] else rows[name] // box[0]
                assert box == ((c["swizzle"] // 2, rows[name]) if k_major[name] else (c["swizzle"] // 2,) * 2)
                total += boxes * box[0] * box[1] * 2
            assert total == (c["bm"] + c["bn"]) * c["swizzle"], (layout, c)


@pytest.mark.parametrize("M, rows", [(1, 16), (16, 16), (17, 32), (29, 32), (63, 64), (64, 64), (65, 64), (300, 64)])
def test_a_k_major_box_stops_short_of_m(M, rows, h100):
    """A K-major A's box is HgemmWgmma::a_rows(M): BM, or where M is shorter M rounded up to 16, so
    no slot's A box lies mostly past M (slow to arrive on an H100); the kernel's expect_tx counts
    those rows (B_SLOT + a_rows(M) x SWZ), and its source says so.  An MN-major A, and the pair
    kernel's A, keep whole boxes."""
    from autosched.templates import HgemmWgmmaClusterTemplate
    from autosched.templates.base import kernel_source
    from autosched.templates.hgemm_wgmma import HgemmWgmmaDynTemplate, a_box_rows
    c = {"bm": 64, "bn": 64, "consumers": 1, "swizzle": 128, "stages": 4, "group": 1}
    assert a_box_rows(M, 64) == rows and a_box_rows(M, 128) == min(128, -(-M // 16) * 16)
    box = lambda t, w, cfg: t.render(w, cfg, h100).args[0].params()["box"]  # noqa: E731
    assert box(HgemmWgmmaDynTemplate(), Hgemm.from_shape(f"{M}x256x512_bt"), c) == (64, rows)
    assert box(HgemmWgmmaDynTemplate(), Hgemm.from_shape(f"{-(-M // 8) * 8}x256x512", layout="tn"), c) == (64, 64)
    if M >= 65:
        pair = {**c, "cluster_dim": "m"}
        assert box(HgemmWgmmaClusterTemplate(), Hgemm.from_shape(f"{M}x256x512_bt"), pair) == (64, 64)
    src = kernel_source("hgemm_wgmma.cuh")
    assert "return B_SLOT + a_rows(M) * SWZ;" in src              # the producer's expect_tx
    assert "return A_MN ? BM : min(BM, (M + 15) / 16 * 16);" in src
    assert "if (!A_MN && m0 + BM > M) m0 = max(0, M - BM);" in src


@pytest.mark.parametrize("params, words", [
    ({"dims": (200, 300), "strides": (404,), "box": (64, 128), "swizzle": 128}, "multiple of 16"),
    ({"dims": (200, 300), "strides": (400,), "box": (64, 512), "swizzle": 128}, "1 .. 256"),
    ({"dims": (200, 300), "strides": (400,), "box": (128, 64), "swizzle": 128}, "at most the 128-byte swizzle"),
    ({"dims": (200, 300), "strides": (400,), "box": (64, 64), "swizzle": 96}, "swizzle must be one of"),
    ({"dims": (200, 300), "strides": (400,), "box": (64, 64), "swizzle": 128, "dtype": "fp32"}, "dtype"),
])
def test_tensormap_request_names_the_bad_input(params, words):
    p = {"of": "input", "dtype": "fp16", **params}
    with pytest.raises(ValueError, match=words):
        tensormap_request(p, 0x7F0000000000)
    with pytest.raises(ValueError, match="16-byte aligned"):
        tensormap_request({"of": "input", "dtype": "fp16", "dims": (8, 8), "strides": (16,), "box": (8, 8),
                           "swizzle": 0}, 0x7F0000000008)


def test_encode_tensormap_calls_the_driver_with_the_request(monkeypatch):
    """The driver call is wired from the request (the CPU machine has no libcuda to encode)."""
    import ctypes
    import types

    from autosched import runtime
    seen = {}

    class FakeMap:
        def __init__(self):
            self.buf = ctypes.create_string_buffer(bytes(range(128)), 128)

        def getPtr(self):
            return ctypes.addressof(self.buf)

    def encode(*args):
        seen["args"] = args
        return (0, FakeMap())
    names = types.SimpleNamespace
    fake = types.SimpleNamespace(
        cuTensorMapEncodeTiled=encode, cuuint64_t=int, cuuint32_t=int,
        CUtensorMapDataType=names(CU_TENSOR_MAP_DATA_TYPE_FLOAT16="f16", CU_TENSOR_MAP_DATA_TYPE_BFLOAT16="bf16"),
        CUtensorMapInterleave=names(CU_TENSOR_MAP_INTERLEAVE_NONE="il0"),
        CUtensorMapSwizzle=names(CU_TENSOR_MAP_SWIZZLE_128B="sw128", CU_TENSOR_MAP_SWIZZLE_NONE="sw0",
                                 CU_TENSOR_MAP_SWIZZLE_64B="sw64", CU_TENSOR_MAP_SWIZZLE_32B="sw32"),
        CUtensorMapL2promotion=names(CU_TENSOR_MAP_L2_PROMOTION_L2_256B="l2"),
        CUtensorMapFloatOOBfill=names(CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE="zero"))
    import cuda.bindings
    monkeypatch.setattr(cuda.bindings, "driver", fake, raising=False)
    monkeypatch.setitem(__import__("sys").modules, "cuda.bindings.driver", fake)
    blob = runtime.encode_tensormap({"of": "input", "dtype": "bf16", "dims": (200, 300), "strides": (400,),
                                     "box": (64, 128), "swizzle": 128}, 0x7F0000000000)
    assert blob == bytes(range(128))
    assert seen["args"] == ("bf16", 2, 0x7F0000000000, [200, 300], [400], [64, 128], [1, 1], "il0", "sw128", "l2", "zero")


@pytest.mark.parametrize("shape, words", [
    ("256x256x256_bb", "not the blocked 16x16 tiles (bb)"),
    ("300x260x200_bt", "N=260: its TMA store writes C rows"),
])
def test_refuses_what_its_kernel_does_not_read(t, h100, shape, words):
    w = Hgemm.from_shape(shape)
    assert words in t.refuses(w)
    with pytest.raises(WorkloadError, match="hgemm_wgmma cannot serve"):
        t.space(w, h100)
    assert "hgemm_wgmma" not in [x.family for x in family("hgemm").templates_for(w)]


def test_serves_every_row_layout_and_both_dtypes(t):
    for layout in LAYOUTS:
        for dtype in ("fp16", "bf16"):
            w = Hgemm.from_shape("4096x4096x4096", layout=layout, dtype=dtype)
            assert t.refuses(w) is None
            assert "hgemm_wgmma" in [x.family for x in templates_for(w)]


def test_refuses_gpus_without_wgmma(t, h100):
    a100 = dataclasses.replace(h100, name="NVIDIA A100-SXM4-80GB", cc=(8, 0), sm_count=108)
    w = Hgemm.from_shape("4096x4096x4096_bt")
    space = t.space(w, a100)
    assert space.size() == 0
    assert any("wgmma and setmaxnreg need an sm_90 GPU" in v and "sm_80" in v
               for v in space.violations({"bm": 128, "bn": 128, "consumers": 2, "swizzle": 128, "stages": 3,
                                          "group": 8}))
    with pytest.raises(WorkloadError, match="sm_80"):
        t.default_config(w, a100)
    with pytest.raises(WorkloadError, match="sm_80"):
        t.render(w, {"bm": 128, "bn": 128, "consumers": 2, "swizzle": 128, "stages": 3, "group": 8}, a100)
    assert family("hgemm").sanitize_picks(t, w, a100) == []


def test_sanitizer_picks_are_corners_of_the_space(t, h100):
    w = Hgemm.from_shape("300x264x200")
    picks = family("hgemm").sanitize_picks(t, w, h100)
    space = t.space(w, h100)
    assert len(picks) >= 4 and all(space.contains(c) for c in picks)
    assert len({tuple(sorted(c.items())) for c in picks}) == len(picks)
    sizes = [smem_bytes(c["bm"], c["bn"], c["swizzle"], c["stages"]) for c in picks]
    assert sizes[0] == max(smem_bytes(c["bm"], c["bn"], c["swizzle"], c["stages"]) for c in space)
    assert picks[1]["swizzle"] == 32 and picks[1]["bm"] * picks[1]["bn"] == 64 * 64


@pytest.mark.parametrize("shape", ["256x256x256_bt", "296x264x200_tn_bf16"])
def test_export_encodes_the_maps_over_the_callers_buffers(t, h100, tmp_path, shape):
    """The launcher takes A, B and C as buffers, encodes each map the spec describes over them
    (tensormap_host.cuh; the call cuda_export.encode_map_call writes) and passes the maps by value."""
    from autosched.cuda_export import encode_map_call, export_cuda
    w = Hgemm.from_shape(shape)
    cfg = t.default_config(w, h100)
    spec = t.render(w, cfg, h100)
    text = export_cuda(w, t, cfg, h100, tmp_path / "k.cu").read_text()
    launcher = text[text.index('extern "C" cudaError_t autosched_hgemm_wgmma_'):]
    assert launcher.startswith(f'extern "C" cudaError_t autosched_hgemm_wgmma_{config_hash(dict(spec.config))}'
                               "(const void* A, const void* B, void* C, int M, int N, int K, cudaStream_t stream)")
    for a in spec.args[:3]:
        encode = encode_map_call(a.params(), f"map_{a.name}", a.name)
        assert f"  autosched_wgmma::TensorMap map_{a.name};\n  if (!{encode}) return cudaErrorInvalidValue;" in launcher
    assert f"{spec.name_expression}<<<dim3{spec.grid}, dim3{spec.block}, {spec.smem_bytes}, stream>>>" \
        "(map_A, map_B, map_C, M, N, K);" in launcher
    assert "namespace autosched_tma" in text and "template __global__ void" not in text
    assert "// Build: nvcc -gencode arch=compute_90a,code=sm_90a -c k.cu  (link with -lcuda" in text
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc not installed: checked the text only")
    r = subprocess.run(["nvcc", "-gencode", "arch=compute_90a,code=sm_90a", "-c", str(tmp_path / "k.cu"), "-o",
                        str(tmp_path / "k.o")], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]


def _corners(cfgs):
    keys = [lambda c: smem_bytes(c["bm"], c["bn"], c["swizzle"], c["stages"]),
            lambda c: -c["bm"] * c["bn"] - c["swizzle"],
            lambda c: (c["consumers"] == 1, m_blocks(c["bm"], c["consumers"]) * c["bn"]),
            lambda c: (c["consumers"] == 2, m_blocks(c["bm"], c["consumers"]) * c["bn"], -c["swizzle"])]
    out = []
    for k in keys:
        c = max(cfgs, key=k)
        if c not in out:
            out.append(c)
    return out


def test_corner_and_sampled_configs_compile_for_sm90a_without_spills(t, h100, tmp_path):
    rng = random.Random(7)
    specs = []
    for shape, layout, dtype in [("4096x4096x4096", "nt", "fp16"), ("1000x1032x504", "nn", "bf16"),
                                 ("4096x4096x4096", "tn", "fp16"), ("296x264x200", "tt", "bf16")]:
        w = Hgemm.from_shape(shape, layout=layout, dtype=dtype)
        cfgs = t.space(w, h100).enumerate()
        picks = _corners(cfgs) + rng.sample(cfgs, 1) + [t.default_config(w, h100)]
        specs += [t.render(w, c, h100) for c in picks]
    assert_wgmma_builds_clean(specs, tmp_path, h100)
