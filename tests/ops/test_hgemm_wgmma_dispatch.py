"""ops.HgemmDispatch on the wgmma backend, on the CPU: backend selection and its refusals, the
wave-model ladder, the TMA map cache (encode mocked: the same buffer is never re-encoded, a new one
is), the host cost of a call, and every wgmma config of the ladder compiling for sm_90a unspilled."""

import dataclasses

import pytest

from autosched import knobs
from autosched.build import BuildCache, Builder
from autosched.ops import hgemm as H
from autosched.ops.hgemm import HgemmDispatch, TensorMapCache, resolve_backend
from autosched.templates.hgemm_ladder import WGMMA_CANDIDATES, wgmma_estimate, wgmma_ladder
from autosched.runtime import TensorMapArg
from autosched.templates.hgemm_wgmma import MAX_ACC, SMEM_CAP_SM90, m_blocks, smem_bytes
from fake_dispatch import load_fakes

LLAMA = ((4096, 4096), (12288, 4096), (22016, 4096), (4096, 11008))


@pytest.fixture
def a100(h100):
    return dataclasses.replace(h100, name="NVIDIA A100-SXM4-80GB", cc=(8, 0), sm_count=108)


def test_the_switch_puts_auto_on_wgmma_and_the_environment_overrides_it(h100, monkeypatch):
    monkeypatch.delenv("AUTOSCHED_WGMMA_IN_AUTO", raising=False)
    assert knobs.WGMMA_IN_AUTO.default is True            # earned by the prefill-wgmma GPU stage
    assert resolve_backend("auto", 4096, 4096, "fp16", h100) == "hgemm_wgmma"
    monkeypatch.setattr(knobs, "WGMMA_IN_AUTO", dataclasses.replace(knobs.WGMMA_IN_AUTO, default=False))
    assert resolve_backend("auto", 4096, 4096, "fp16", h100) == "hgemm_dyn"
    assert resolve_backend("wgmma", 4096, 4096, "fp16", h100) == "hgemm_wgmma"
    assert resolve_backend("mma", 4096, 4096, "fp16", h100) == "hgemm_dyn"
    monkeypatch.setattr(knobs, "WGMMA_IN_AUTO", dataclasses.replace(knobs.WGMMA_IN_AUTO, default=True))
    assert resolve_backend("auto", 4096, 4096, "fp16", h100) == "hgemm_wgmma"
    assert resolve_backend("auto", 4100, 4096, "fp16", h100) == "hgemm_dyn"      # N % 8: wgmma cannot
    monkeypatch.setattr(knobs, "WGMMA_IN_AUTO", dataclasses.replace(knobs.WGMMA_IN_AUTO, default=False))
    monkeypatch.setenv("AUTOSCHED_WGMMA_IN_AUTO", "1")
    assert resolve_backend("auto", 4096, 4096, "bf16", h100) == "hgemm_wgmma"
    monkeypatch.setenv("AUTOSCHED_WGMMA_IN_AUTO", "0")
    assert HgemmDispatch(4096, 4096, h100).backend == "hgemm_dyn"


def test_refusals_name_the_reason(h100, a100, monkeypatch):
    monkeypatch.delenv("AUTOSCHED_WGMMA_IN_AUTO", raising=False)
    with pytest.raises(ValueError, match="backend wgmma cannot serve 4096x4096 fp16: wgmma and setmaxnreg need an sm_90"):
        resolve_backend("wgmma", 4096, 4096, "fp16", a100)
    with pytest.raises(ValueError, match="N=4100: its TMA store"):
        HgemmDispatch(4100, 4096, h100, backend="wgmma")
    with pytest.raises(ValueError, match="reads fp16 only, not bf16"):
        resolve_backend("mma", 4096, 4096, "bf16", h100)
    assert resolve_backend("auto", 4096, 4096, "bf16", h100) == "hgemm_wgmma"
    monkeypatch.setenv("AUTOSCHED_WGMMA_IN_AUTO", "0")       # mma reads fp16 only: bf16 then has no backend
    with pytest.raises(ValueError, match="is switched off here"):
        resolve_backend("auto", 4096, 4096, "bf16", h100)
    monkeypatch.delenv("AUTOSCHED_WGMMA_IN_AUTO")
    with pytest.raises(ValueError, match="cannot serve it here"):
        resolve_backend("auto", 4096, 4096, "bf16", a100)
    with pytest.raises(ValueError, match="backend must be one of auto, wgmma, mma"):
        resolve_backend("cublas", 4096, 4096, "fp16", h100)
    assert resolve_backend("auto", 4096, 4096, "fp16", a100) == "hgemm_dyn"


def test_candidates_obey_the_template(h100):
    for c in WGMMA_CANDIDATES:
        assert m_blocks(c["bm"], c["consumers"]) in (1, 2)
        assert m_blocks(c["bm"], c["consumers"]) * c["bn"] // 2 <= MAX_ACC
        assert smem_bytes(c["bm"], c["bn"], c["swizzle"], c["stages"]) <= SMEM_CAP_SM90
    for n, k in LLAMA:
        g = HgemmDispatch(n, k, h100, backend="wgmma")
        assert set(g.families) == {"hgemm_wgmma"} and WGMMA_CANDIDATES[-1] in g.configs


def test_the_ladder_follows_the_tile_math(h100):
    for n, k in LLAMA:
        g = HgemmDispatch(n, k, h100, backend="wgmma")
        assert g.config(1)["bm"] == 64 and g.config(1)["consumers"] == 1      # one m64 block for a short prompt
        assert g.config(4096) == WGMMA_CANDIDATES[-1]                          # the 128 x 256 default
        assert g.config(2048) == WGMMA_CANDIDATES[-1]
        # every M gets the config the wave model ranks first
        for M in (1, 7, 64, 65, 128, 300, 777, 2048, 4096):
            est = [wgmma_estimate(c, M, n, 132) for c in g.configs]
            assert est[g.index(M)] == min(est), (n, k, M)
            assert g.grid(M) == (min(132, -(-M // g.config(M)["bm"]) * -(-n // g.config(M)["bn"])), 1, 1)
    # N = 4096, M <= 64: 64 x 64 tiles give 64 CTAs, more than any other candidate
    assert HgemmDispatch(4096, 4096, h100, backend="wgmma").config(64)["bn"] == 64
    runs = wgmma_ladder(WGMMA_CANDIDATES, 4096, 4096, 132)
    assert runs[-1][0] == 4096 and all(a[0] < b[0] for a, b in zip(runs, runs[1:]))
    text = HgemmDispatch(4096, 4096, h100, backend="wgmma").describe()
    assert text.startswith("4096x4096 fp16 GEMM: default hgemm_wgmma (wgmma) configs by M (M<=128 wgmma 64x64 c1")
    short = HgemmDispatch(4096, 4096, h100, backend="wgmma", m_max=256)     # the space at a short context
    assert all(c["group"] >= 1 for c in short.configs) and short.index(256) >= 0


def test_tensormap_cache_encodes_once_per_buffer():
    seen = []

    def encode(params, address):
        seen.append((address, params["dims"]))
        return address.to_bytes(8, "little") * 16
    tm = TensorMapCache(encode, capacity=8)
    p = lambda: {"dims": (4096, 7)}     # noqa: E731
    a = tm.get(("A", 0x7F00, 7), p, 0x7F00)
    assert isinstance(a, TensorMapArg) and a.blob == (0x7F00).to_bytes(8, "little") * 16
    assert tm.get(("A", 0x7F00, 7), p, 0x7F00) is a and len(seen) == 1      # same buffer: no encode
    b = tm.get(("A", 0x8F00, 7), p, 0x8F00)                                 # new pointer: a new map
    assert b.blob != a.blob and seen[-1][0] == 0x8F00 and tm.encodes == 2
    for i in range(10):
        tm.get(("A", 0x9000 + 256 * i, 7), p, 0x9000 + 256 * i)
    assert len(tm) <= 8 and tm.encodes == 12       # over capacity: the older half dropped
    assert tm.get(("A", 0x7F00, 7), p, 0x7F00) is not a and tm.encodes == 13   # dropped: encoded again


def test_tensormap_arg_holds_exactly_one_map():
    with pytest.raises(ValueError, match="128 bytes, got 64"):
        TensorMapArg(bytes(64))


def _fake_loaded(g, monkeypatch):
    encodes = []
    load_fakes(g, monkeypatch, lambda p, a: encodes.append((a, p)) or bytes(128))
    return encodes


def test_a_call_binds_cached_maps_and_scalars(h100, monkeypatch):
    g = HgemmDispatch(4096, 4096, h100, backend="wgmma")
    encodes = _fake_loaded(g, monkeypatch)
    x, w, y = 0x7F0000000000, 0x7F1000000000, 0x7F2000000000
    g(None, x, w, y, 300)
    assert len(encodes) == 3
    (addr_a, pa), (addr_b, pb), (addr_c, pc) = encodes
    assert (addr_a, addr_b, addr_c) == (x, w, y)
    assert pa["dims"] == (4096, 300) and pb["dims"] == (4096, 4096) and pc["dims"] == (4096, 300)
    assert pa["of"] == pb["of"] == "input" and pc["of"] == "output"
    k = g._kernels[g.index(300)]
    grid, args = k.calls[-1]
    assert grid == g.grid(300) and [int(a) for a in args[3:]] == [300, 4096, 4096]
    g(None, x, w, y, 300)                       # the prefill's next prompt of this length: all hits
    assert len(encodes) == 3 and all(a is b for a, b in zip(k.calls[-1][1][:3], args[:3]))
    assert all(isinstance(a, TensorMapArg) for a in args[:3])     # passed by value, not as pointers
    g(None, x, w, y, 301)                       # a new M: new A and C maps, the weight's is kept
    assert len(encodes) == 5 and {a for a, _ in encodes[3:]} == {x, y}
    g(None, x + 4096, w, y, 301)                # another X buffer: its map only
    assert len(encodes) == 6 and encodes[-1][0] == x + 4096


def test_host_overhead_per_call_is_small(h100, monkeypatch):
    g = HgemmDispatch(4096, 4096, h100, backend="wgmma")
    _fake_loaded(g, monkeypatch)
    # the best of five batches: another process loading the CPU (a test run beside this one) inflates a
    # batch, never the dispatcher's own cost
    us = min(H.host_overhead_us(g, None, 0x7F0000000000, 0x7F1000000000, 0x7F2000000000, [1, 7, 300, 2048], reps=400)
             for _ in range(5))
    assert us < 30, us                          # cuda.core's launch itself is on top (~5-10 us)


def test_bf16_on_wgmma_only(h100, monkeypatch):
    g = HgemmDispatch(4096, 4096, h100, backend="wgmma", dtype="bf16")
    assert "bf16 GEMM" in g.describe() and all("bf16=1" in s.workload_key for s in g.specs())
    assert all(s.name_expression.startswith("hgemm_wgmma<1, 0, 0,") for s in g.specs())   # BF16, A (M,K), B (N,K)


def test_ladder_configs_compile_for_sm90a_without_spills(h100, tmp_path):
    specs = HgemmDispatch(4096, 4096, h100, backend="wgmma").specs() \
        + HgemmDispatch(22016, 4096, h100, backend="wgmma").specs()
    specs = list({s.source_hash: s for s in specs}.values())
    assert len(specs) == len(WGMMA_CANDIDATES)
    with Builder(workers=2, cache=BuildCache(tmp_path)) as b:
        for spec, binary in zip(specs, b.build_many(specs)):
            assert binary.ok, (spec.name_expression, binary.error)
            r = binary.resources
            assert r.spills == 0 and r.stack_bytes == 0, (spec.name_expression, r)
            assert "sm_90a" in binary.log and "Potential Performance Loss" not in binary.log, binary.log
            assert r.registers * spec.threads <= h100.regs_per_block
