"""On a GPU: hgemm_stream micro-kernels served for a dynamic M by ops.HgemmDispatch, against float64,
on ragged Ms called in a row through one dispatcher (with hgemm_dyn's mma.sync kernels, so any sm_80+
GPU), so one workspace per stream is reused by launches of other Ms, tile counts and configs, grown
and shrunk in between: a counter a launch failed to reset, or a partial landing on another launch's
counters, shows as a wrong result of a later call.  FP16 and BF16.  What had to pass (with
scripts/gpu_check.py dyn-stream's sanitizers) before knobs.DYN_STREAM flipped (it passed on an H100,
2026-11-26); it keeps the switch on for the module whatever the environment."""

import pytest

from gemm_checks import assert_serves_in_turn, handmade_dispatcher, scaled_weight

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")

STR, DYN = "hgemm_stream", "hgemm_dyn"
# split 1, 2 and 4; W rows a CTA 32..128; A rows 8..64
STREAMS = [
    {"rw": 1, "wn": 2, "wk": 4, "mt": 16, "kw": 64, "stages": 6, "split_k": 1},
    {"rw": 2, "wn": 2, "wk": 2, "mt": 8, "kw": 32, "stages": 4, "split_k": 4},
    {"rw": 1, "wn": 4, "wk": 4, "mt": 64, "kw": 32, "stages": 3, "split_k": 2},
]
PLAIN = {"bm": 128, "bn": 128, "wm": 64, "wn": 64, "bk": 32, "stages": 3, "pad": 8, "local_pad": 1}
TOPS = [16, 64, 256]
SEQUENCE = [100, 1, 7, 64, 65, 129, 300, 33, 256, 2048, 5, 100]


@pytest.fixture(scope="module", autouse=True)
def switch():
    from cuda.core import Device
    Device(0).set_current()
    mp = pytest.MonkeyPatch()
    mp.setenv("AUTOSCHED_DYN_STREAM", "1")
    yield
    mp.undo()



def dispatcher(builder, N, K, kernels, tops, dtype="fp16"):
    # bf16 is served by the wgmma backend only (hgemm_dyn reads fp16); stream kernels by either
    return handmade_dispatcher(builder, N, K, kernels, tops, backend="wgmma" if dtype == "bf16" else "mma",
                               dtype=dtype)


@pytest.mark.parametrize("n, k", [(4096, 4096), (264, 4104), (1032, 520)])
def test_dispatched_stream_on_ragged_ms_through_one_workspace(builder, n, k):
    g = dispatcher(builder, n, k, [(STR, c) for c in STREAMS] + [(DYN, PLAIN)], TOPS)
    assert [g.family(m) for m in (1, 50, 200, 2048)] == [STR, STR, STR, DYN]
    w, gen = scaled_weight(n, k)
    grants = assert_serves_in_turn(g, w, SEQUENCE, gen)
    assert 1 <= grants[-1] < len(SEQUENCE)


@pytest.mark.parametrize("which", range(len(STREAMS)))
def test_each_stream_config_serves_every_m_on_one_workspace(builder, which):
    """One stream config over the whole range (it serves any M; slow past a few hundred rows): tile
    counts from 1 to hundreds, the same M twice in a row (its counters reset by the first)."""
    g = dispatcher(builder, 4096, 4096, [(STR, STREAMS[which])], [])
    w = (torch.randn((4096, 4096), device="cuda") / 64).half()
    assert_serves_in_turn(g, w, (256, 1, 256, 17, 1000, 1000, 128, 3))


def test_bf16_on_the_wgmma_backend(builder, wgmma_gpu):
    g = dispatcher(builder, 1032, 520, [(STR, c) for c in STREAMS], TOPS[:-1], dtype="bf16")
    w = (torch.randn((1032, 520), device="cuda") / 23).bfloat16()
    assert_serves_in_turn(g, w, (1, 40, 200))
