"""On an sm_90 GPU: the wgmma backend of ops.HgemmDispatch (TMA maps cached per buffer) against torch
for short and long M, every config of its ladder, bf16, the map cache across buffers; and the batched
prefill with backend="wgmma" against the token-by-token path (the helpers of test_prefill_gpu).
What must pass before knobs.WGMMA_IN_AUTO is flipped."""

import numpy as np
import pytest

from gemm_checks import assert_matches_float64
from test_prefill_gpu import MODELS, TOL, _greedy_agrees, _rel, stepwise_reference   # noqa: F401  (rootdir on sys.path)

pytestmark = [pytest.mark.gpu, pytest.mark.usefixtures("wgmma_gpu")]
torch = pytest.importorskip("torch")



@pytest.mark.parametrize("n, k", [(4096, 4096), (4096, 11008), (11008, 4096), (96, 288)])
@pytest.mark.parametrize("M", [1, 7, 64, 128, 300, 2048])
def test_linear_on_wgmma_matches_torch(n, k, M):
    from autosched.ops import linear
    g = torch.Generator(device="cuda").manual_seed(M + n)
    x = torch.randn((M, k), device="cuda", generator=g).half()
    w = (torch.randn((n, k), device="cuda", generator=g) / k ** 0.5).half()
    assert_matches_float64(linear(x, w, backend="wgmma"), x, w)


@pytest.mark.parametrize("M", [1, 100, 1000])
def test_linear_on_wgmma_bf16(M):
    from autosched.ops import linear
    x = torch.randn((M, 4096), device="cuda").bfloat16()
    w = (torch.randn((4096, 4096), device="cuda") / 64).bfloat16()
    assert_matches_float64(linear(x, w, backend="wgmma"), x, w)


def test_every_ladder_config_and_the_map_cache(builder):
    """Each wgmma config of the ladder forced for ragged Ms; then the cache: a new output buffer gets
    its own map (the old one must not be written), the same buffers hit."""
    from cuda.core import Stream

    from autosched.device import query
    from autosched.ops import HgemmDispatch
    g = HgemmDispatch(4096, 1024, query(0), backend="wgmma", m_max=2048)
    g.load(builder)
    s = Stream.from_handle(torch.cuda.current_stream().cuda_stream)
    w = (torch.randn((4096, 1024), device="cuda") / 32).half()
    ladder = list(g._ladder)
    for i in range(len(g.configs)):
        g._ladder, g._tops = [(g.m_max, i)], [g.m_max]
        for M in (1, 65, 300, 2048):
            x = torch.randn((M, 1024), device="cuda").half()
            y = torch.full((M, 4096), float("nan"), device="cuda").half()
            g(s, x, w, y, M)
            torch.cuda.synchronize()
            assert_matches_float64(y, x, w)
    g._ladder, g._tops = ladder, [t for t, _ in ladder]
    x = torch.randn((300, 1024), device="cuda").half()
    y1, y2 = torch.full((300, 4096), float("nan"), device="cuda").half(), torch.zeros((300, 4096), device="cuda").half()
    g(s, x, w, y1, 300)
    n = g.tensormaps.encodes
    g(s, x, w, y1, 300)
    assert g.tensormaps.encodes == n                      # all three maps hit
    g(s, x, w, y2, 300)
    torch.cuda.synchronize()
    assert g.tensormaps.encodes == n + 1                  # only C's map is new
    assert_matches_float64(y1, x, w)
    assert_matches_float64(y2, x, w)


@pytest.fixture(scope="module", params=[(m, f) for m in MODELS for f in ("fp16", "q4f16_1")],
                ids=lambda p: f"{p[0]}-{p[1]}")
def model(request, builder):
    from autosched.engine.engine import Engine
    from autosched.models.llama2c import random_weights
    name, fmt = request.param
    cfg = MODELS[name]
    return cfg, fmt, Engine(cfg, random_weights(cfg, 7), fmt, builder=builder, prefill_backend="wgmma")


@pytest.mark.parametrize("T", (1, 7, 64, 300))
def test_wgmma_prefill_matches_the_stepwise_path(model, T):
    cfg, fmt, eng = model
    assert all(g.backend == "hgemm_wgmma" for g in eng.prefiller.gemm.values())
    assert "hgemm_wgmma (wgmma)" in "\n".join(eng.describe())
    prompt, step, kc, vc, want, after = stepwise_reference(cfg, eng, T)
    for _ in range(2):                        # the second run reuses the cached maps (same scratch, same weights)
        bat = eng.prefill(prompt, mode="batched", all_logits=True).cpu().numpy()
        assert bat.shape == (T, cfg.vocab_size) and np.isfinite(bat).all()
        assert _rel(bat, step) < TOL
    assert np.mean(bat.argmax(1) == step.argmax(1)) >= 0.9
    for got, ref in ((eng.k_cache[:, :T], kc), (eng.v_cache[:, :T], vc)):
        assert _rel(got.float().cpu().numpy(), ref.float().cpu().numpy()) < TOL
    _greedy_agrees(eng, prompt, want, after)


def test_dispatcher_host_overhead_is_small_next_to_the_kernel(builder):
    from cuda.core import Stream

    from autosched.device import query
    from autosched.ops import HgemmDispatch
    from autosched.ops.hgemm import host_overhead_us
    g = HgemmDispatch(4096, 4096, query(0), backend="wgmma")
    g.load(builder)
    s = Stream.from_handle(torch.cuda.current_stream().cuda_stream)
    x, w = torch.randn((2048, 4096), device="cuda").half(), torch.randn((4096, 4096), device="cuda").half()
    y = torch.empty((2048, 4096), device="cuda").half()
    us = host_overhead_us(g, s, x, w, y, [1, 64, 300, 2048])
    torch.cuda.synchronize()
    assert us < 40, us                          # a 2048 x 4096 x 4096 GEMM takes ~100 us
