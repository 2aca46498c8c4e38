"""On a GPU: the tensor-core prefill attention (kernels/prefill_attention_tc.cuh) against a float64 numpy
causal attention for ragged prompt lengths, every tested head size, both query tiles, GQA ratios 1 and
4 and a context already in the cache; then whole batched prefills with the switch on
(AUTOSCHED_PREFILL_TC_ATTN=1) against the token-by-token path (the helpers of test_prefill_gpu).
What must pass before engine/prefill.py TC_ATTENTION_VERIFIED is flipped."""

import numpy as np
import pytest

from autosched.models.llama2c import LlamaConfig, random_weights
from test_prefill_gpu import MODELS, TOL, _greedy_agrees, _rel, stepwise_reference   # noqa: F401  (rootdir on sys.path)

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")

SWITCH = "AUTOSCHED_PREFILL_TC_ATTN"


@pytest.fixture(scope="module", autouse=True)
def current_device():
    from cuda.core import Device
    Device(0).set_current()



# -- the kernel on its own ------------------------------------------------------------------------

def attention_f64(qkv, k_cache, v_cache, cs, pos0, n_heads, n_kv, hs):
    """float64 causal attention of the T prompt rows of qkv (fp16, (T, q_dim + 2 kv_dim); only q is
    read) at positions pos0.., q RoPE'd (pairs 2j, 2j+1) here, K and V read from the caches as they
    are (K already RoPE'd), head h on kv head h / (n_heads / n_kv)."""
    T = qkv.shape[0]
    n = pos0 + T
    q = qkv[:, :n_heads * hs].astype(np.float64).reshape(T, n_heads, hs)
    c, s = cs[pos0:n, None, :, 0].astype(np.float64), cs[pos0:n, None, :, 1].astype(np.float64)
    qr = np.empty_like(q)
    qr[..., 0::2] = q[..., 0::2] * c - q[..., 1::2] * s
    qr[..., 1::2] = q[..., 0::2] * s + q[..., 1::2] * c
    rep = n_heads // n_kv
    K = np.repeat(k_cache[:n].astype(np.float64).reshape(n, n_kv, hs), rep, axis=1)
    V = np.repeat(v_cache[:n].astype(np.float64).reshape(n, n_kv, hs), rep, axis=1)
    sc = np.einsum("thd,shd->hts", qr, K) / np.sqrt(hs)
    sc[:, np.arange(n)[None, :] > pos0 + np.arange(T)[:, None]] = -np.inf
    p = np.exp(sc - sc.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    return np.einsum("hts,shd->thd", p, V).reshape(T, n_heads * hs)


def run_tc_attention(builder, hs, bq, n_heads, n_kv, T, pos0, seed=0, seq_len=512):
    """One launch of prefill_attention_tc<hs, bq> on random q and a random cache (NaN past pos0 + T):
    (its output, the float64 reference)."""
    from cuda.core import Stream

    from autosched.device import query
    from autosched.engine.engine import rope_table
    from autosched.launch import LoadedKernel
    from autosched.runtime import ptr
    from autosched.templates import prefill as pk
    info = query(0)
    cfg = LlamaConfig(dim=n_heads * hs, hidden_dim=64, n_layers=1, n_heads=n_heads, n_kv_heads=n_kv, vocab_size=64,
                      seq_len=seq_len)
    q_dim, kv_dim = n_heads * hs, n_kv * hs
    g = torch.Generator(device="cuda").manual_seed(seed)
    qkv = torch.randn((T, q_dim + 2 * kv_dim), device="cuda", generator=g).half()
    caches = []
    for _ in range(2):
        c = torch.full((seq_len, kv_dim), float("nan"), device="cuda").half()
        c[:pos0 + T] = torch.randn((pos0 + T, kv_dim), device="cuda", generator=g).half()
        caches.append(c)
    cs = rope_table(cfg, "cuda")
    out = torch.full((T, q_dim), float("nan"), device="cuda").half()
    k = LoadedKernel(pk.tc_attention_spec(hs, info.arch, bq), builder)
    s = Stream.from_handle(torch.cuda.current_stream().cuda_stream)
    i32 = np.int32
    k.launch(s, pk.attention_grid(T, n_heads, bq), ptr(out), ptr(qkv), ptr(caches[0]), ptr(caches[1]), ptr(cs),
             i32(pos0), i32(T), i32(n_heads), i32(kv_dim), i32(n_heads // n_kv))
    torch.cuda.synchronize()
    want = attention_f64(qkv.cpu().numpy(), caches[0].cpu().numpy(), caches[1].cpu().numpy(), cs.cpu().numpy(),
                         pos0, n_heads, n_kv, hs)
    return out.cpu().numpy(), want


@pytest.mark.parametrize("bq", [64, 128])
@pytest.mark.parametrize("hs", [32, 48, 64, 128])
@pytest.mark.parametrize("ratio", [1, 4])
@pytest.mark.parametrize("T, pos0", [(1, 0), (17, 0), (64, 0), (129, 0), (300, 0), (70, 5), (1, 200)])
def test_tc_attention_matches_float64(builder, bq, hs, ratio, T, pos0):
    got, want = run_tc_attention(builder, hs, bq, 8, 8 // ratio, T, pos0, seed=T + hs + ratio)
    assert np.isfinite(got).all()
    # q rounded to fp16 after its RoPE and P to fp16 before P V: a few 1e-4 on outputs of size ~1
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=0, atol=5e-3)


def test_tc_attention_long_prompt_every_tile_count(builder):
    """1000 queries of 128: 8 query tiles of 128 (16 of 64), up to 16 key tiles, a ragged last one."""
    for bq in (64, 128):
        got, want = run_tc_attention(builder, 128, bq, 4, 1, 1000, 0, seed=bq, seq_len=1024)
        np.testing.assert_allclose(got.astype(np.float64), want, rtol=0, atol=5e-3)


# -- whole prefills with the switch on -----------------------------------------------------------

TC_MODELS = {
    "gqa": MODELS["gqa"],                       # head size 32, 2 query heads a kv head
    "stories15M": MODELS["stories15M"],         # head size 48, no GQA
    "gqa4-hs64": LlamaConfig(dim=256, hidden_dim=352, n_layers=2, n_heads=4, n_kv_heads=1, vocab_size=512,
                             seq_len=512),      # head size 64, 4 query heads a kv head
}


@pytest.fixture(scope="module", params=list(TC_MODELS))
def tc_model(request, builder):
    from autosched.engine.engine import Engine
    cfg = TC_MODELS[request.param]
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(SWITCH, "1")
        eng = Engine(cfg, random_weights(cfg, 7), "fp16", builder=builder)
    assert eng.prefiller.tc_attention and "attn" not in eng.prefiller.specs
    return cfg, eng


@pytest.mark.parametrize("bq", [None, 128])
@pytest.mark.parametrize("T", [1, 7, 17, 64, 129, 300])
def test_batched_prefill_on_tensor_cores_matches_the_stepwise_path(tc_model, T, bq):
    cfg, eng = tc_model
    eng.prefiller.tc_bq = bq                    # None: the rule (64 for these few heads), 128 forced
    try:
        prompt, step, kc, vc, want, after = stepwise_reference(cfg, eng, T)
        bat = eng.prefill(prompt, mode="batched", all_logits=True).cpu().numpy()
    finally:
        eng.prefiller.tc_bq = None
    assert bat.shape == (T, cfg.vocab_size) and np.isfinite(bat).all()
    assert _rel(bat, step) < TOL
    assert np.mean(bat.argmax(1) == step.argmax(1)) >= 0.9
    assert eng.pos == T and eng.next_token() == int(bat[-1].argmax())
    for got, ref in ((eng.k_cache[:, :T], kc), (eng.v_cache[:, :T], vc)):
        assert _rel(got.float().cpu().numpy(), ref.float().cpu().numpy()) < TOL
    _greedy_agrees(eng, prompt, want, after)


def test_describe_names_the_tensor_core_attention(tc_model):
    cfg, eng = tc_model
    assert f"attention prefill_attention_tc<{cfg.head_size}, BQ> (tensor cores" in "\n".join(eng.describe())


def test_switch_on_with_an_unserved_head_size_keeps_the_cuda_core_kernel(builder, monkeypatch):
    from autosched.engine.engine import Engine
    cfg = LlamaConfig(dim=320, hidden_dim=352, n_layers=1, n_heads=4, n_kv_heads=2, vocab_size=512, seq_len=256)
    monkeypatch.setenv(SWITCH, "1")
    eng = Engine(cfg, random_weights(cfg, 3), "fp16", builder=builder)     # head size 80
    assert not eng.prefiller.tc_attention and "attn" in eng.prefiller.specs
    assert "attention prefill_attention<80> (CUDA cores; the tensor-core kernel refuses" in "\n".join(eng.describe())
    prompt, step, *_ = stepwise_reference(cfg, eng, 64)
    bat = eng.prefill(prompt, mode="batched", all_logits=True).cpu().numpy()
    assert _rel(bat, step) < TOL
