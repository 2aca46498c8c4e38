"""On a GPU: the batched prefill (engine/prefill.py) against the token-by-token path and the float64
reference, in fp16 and q4f16_1, on a stories15M-shaped and a GQA random model, prompts of 1, 7, 64
and 300 tokens: logits at every position, the KV cache, and the greedy tokens decoded after it.
Then its parts on their own: the causal attention kernel (with RoPE, GQA, a context already in the
cache), the q4f16_1 dequant in every layout, and ops.linear / HgemmDispatch against torch."""

import dataclasses

import numpy as np
import pytest

from autosched.models.llama2c import SEED_CONFIGS, LlamaConfig, random_weights
from autosched.models.quantize import quantized_model
from autosched.models.reference import ReferenceDecoder

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")

MODELS = {
    "stories15M": dataclasses.replace(SEED_CONFIGS["stories15M"], seq_len=512),      # room for 300 + decoding
    "gqa": LlamaConfig(dim=128, hidden_dim=352, n_layers=2, n_heads=4, n_kv_heads=2, vocab_size=512, seq_len=512),
}
PROMPTS = (1, 7, 64, 300)
TOL = 1e-2          # max |logit diff| / max |logit|: fp16 activations on both paths
DECODE = 8


@pytest.fixture(scope="module", autouse=True)
def current_device():
    from cuda.core import Device
    Device(0).set_current()



@pytest.fixture(scope="module", params=[(m, f) for m in MODELS for f in ("fp16", "q4f16_1")],
                ids=lambda p: f"{p[0]}-{p[1]}")
def model(request, builder):
    from autosched.engine.engine import Engine
    name, fmt = request.param
    cfg = MODELS[name]
    w = random_weights(cfg, 7)
    return cfg, w, fmt, Engine(cfg, w, fmt, builder=builder)


def _rel(a, b) -> float:
    return float(np.abs(a - b).max() / np.abs(b).max())


def _greedy_agrees(eng, prompt, want_tokens, step_logits_after) -> None:
    """Decoding after a batched prefill gives the stepwise tokens, except past a near tie (top-2
    margin within the fp16 tolerance) in the stepwise logits, where either choice is right."""
    got = eng.extend(None, DECODE)
    for i, (g, w) in enumerate(zip(got, want_tokens)):
        if g != w:
            top = np.sort(step_logits_after[i])[-2:]
            assert top[1] - top[0] <= 2 * TOL * np.abs(step_logits_after[i]).max(), (i, got, want_tokens)
            return
    assert len(got) == len(want_tokens)


def stepwise_reference(cfg, eng, T):
    """A random prompt of T tokens through the token-by-token path: (prompt, its logits at every
    position, the K and V caches it wrote, the greedy continuation and the logits each of its
    tokens was chosen from); the caches are then poisoned, so a batched prefill run next must
    write every position it reads."""
    prompt = [int(t) for t in np.random.default_rng(T).integers(0, cfg.vocab_size, T)]
    step = eng.prefill(prompt, mode="stepwise", all_logits=True).cpu().numpy()
    kc, vc = eng.k_cache[:, :T].clone(), eng.v_cache[:, :T].clone()
    want, after = [], [step[-1]]
    for _ in range(DECODE):
        want.append(eng.next_token())
        after.append(eng.step(want[-1]).cpu().numpy())
    eng.k_cache.fill_(float("nan"))
    eng.v_cache.fill_(float("nan"))
    return prompt, step, kc, vc, want, after


@pytest.mark.parametrize("T", PROMPTS)
def test_batched_prefill_matches_the_stepwise_path(model, T):
    cfg, _, fmt, eng = model
    prompt, step, kc, vc, want, after = stepwise_reference(cfg, eng, T)
    bat = eng.prefill(prompt, mode="batched", all_logits=True).cpu().numpy()
    assert bat.shape == (T, cfg.vocab_size) and np.isfinite(bat).all()
    assert _rel(bat, step) < TOL
    assert np.mean(bat.argmax(1) == step.argmax(1)) >= 0.9
    assert eng.pos == T and eng.next_token() == int(bat[-1].argmax())
    np.testing.assert_allclose(eng.logits_f.cpu().numpy(), bat[-1], rtol=0, atol=0)   # argmax_step's copy
    for got, ref in ((eng.k_cache[:, :T], kc), (eng.v_cache[:, :T], vc)):
        assert _rel(got.float().cpu().numpy(), ref.float().cpu().numpy()) < TOL
    _greedy_agrees(eng, prompt, want, after)


def test_batched_prefill_matches_the_float64_reference(model):
    cfg, w, fmt, eng = model
    prompt = [int(t) for t in np.random.default_rng(1).integers(0, cfg.vocab_size, 64)]
    ref = ReferenceDecoder(cfg, quantized_model(w, fmt))
    want = np.stack([ref.step(t) for t in prompt])
    got = eng.prefill(prompt, mode="batched", all_logits=True).cpu().numpy().astype(np.float64)
    assert _rel(got, want) < TOL


def test_auto_mode_and_describe(model):
    cfg, _, fmt, eng = model
    from autosched.engine.prefill import STEPWISE_UP_TO
    text = "\n".join(eng.describe())
    assert "prefill (batched" in text and "fp16 GEMM:" in text
    short = list(range(1, 1 + STEPWISE_UP_TO[fmt]))
    a = eng.prefill(short).cpu().numpy().copy()                    # auto: stepwise at this length
    b = eng.prefill(short, mode="stepwise").cpu().numpy()
    assert np.array_equal(a, b)
    long = list(range(1, 40))
    c = eng.prefill(long).cpu().numpy().copy()                     # auto: batched
    d = eng.prefill(long, mode="batched").cpu().numpy()
    assert np.array_equal(c, d)
    with pytest.raises(ValueError, match="does not fit"):
        eng.prefill([1] * (cfg.seq_len + 1))
    with pytest.raises(ValueError, match="mode"):
        eng.prefill([1], mode="fast")


def test_int8_batched_prefill_matches_the_stepwise_path(builder):
    from autosched.engine.engine import Engine
    cfg = MODELS["gqa"]
    eng = Engine(cfg, random_weights(cfg, 5), "int8", builder=builder)
    for T in (7, 64):
        prompt = [int(t) for t in np.random.default_rng(T).integers(0, cfg.vocab_size, T)]
        step = eng.prefill(prompt, mode="stepwise", all_logits=True).cpu().numpy()
        bat = eng.prefill(prompt, mode="batched", all_logits=True).cpu().numpy()
        assert _rel(bat, step) < TOL and eng.pos == T


def test_fp32_engines_prefill_stepwise(builder):
    from autosched.engine.engine import Engine
    cfg = MODELS["gqa"]
    eng = Engine(cfg, random_weights(cfg, 2), "fp32", builder=builder)
    assert eng.prefiller is None and "stepwise (no batched prefill for fp32)" in eng.describe()[-1]
    with pytest.raises(ValueError, match="no batched prefill"):
        eng.prefill([1, 2, 3], mode="batched")
    assert eng.prefill([1, 2, 3]).shape == (cfg.vocab_size,)


# -- the parts ------------------------------------------------------------------------------------

def _attention_reference(qkv, cs, pos0, k_prev, v_prev, n_heads, n_kv, hs):
    """float64 causal attention with RoPE (pairs 2j, 2j+1) and GQA; k and v rounded to fp16 as the
    cache holds them."""
    T = qkv.shape[0]
    q_dim, kv_dim = n_heads * hs, n_kv * hs
    x = qkv.double()
    q = x[:, :q_dim].view(T, n_heads, hs)
    k = x[:, q_dim:q_dim + kv_dim].view(T, n_kv, hs)
    v = x[:, q_dim + kv_dim:].view(T, n_kv, hs)
    c, s = cs[pos0:pos0 + T, None, :, 0].double(), cs[pos0:pos0 + T, None, :, 1].double()

    def rope(a):
        out = torch.empty_like(a)
        out[..., 0::2] = a[..., 0::2] * c - a[..., 1::2] * s
        out[..., 1::2] = a[..., 0::2] * s + a[..., 1::2] * c
        return out
    K = torch.cat([k_prev.double(), rope(k).half().double()])
    V = torch.cat([v_prev.double(), v.half().double()])
    rep = n_heads // n_kv
    K, V = K.repeat_interleave(rep, dim=1), V.repeat_interleave(rep, dim=1)
    sc = torch.einsum("thd,shd->hts", rope(q), K) / hs ** 0.5
    mask = torch.arange(pos0 + T, device=qkv.device)[None, :] > (pos0 + torch.arange(T, device=qkv.device))[:, None]
    p = torch.softmax(sc.masked_fill(mask[None], float("-inf")), dim=-1)
    return torch.einsum("hts,shd->thd", p, V).reshape(T, q_dim), K[:, ::rep], V[:, ::rep]


@pytest.mark.parametrize("hs, n_heads, n_kv", [(32, 4, 2), (48, 6, 6), (128, 8, 2)])
@pytest.mark.parametrize("T, pos0", [(1, 0), (7, 0), (64, 0), (300, 0), (70, 5)])
def test_attention_kernel_matches_torch(builder, hs, n_heads, n_kv, T, pos0):
    from cuda.core import Stream

    from autosched.device import query
    from autosched.engine.engine import rope_table
    from autosched.launch import LoadedKernel
    from autosched.runtime import ptr
    from autosched.templates import prefill as pk
    info = query(0)
    cfg = LlamaConfig(dim=n_heads * hs, hidden_dim=64, n_layers=1, n_heads=n_heads, n_kv_heads=n_kv,
                      vocab_size=64, seq_len=512)
    q_dim, kv_dim = n_heads * hs, n_kv * hs
    g = torch.Generator(device="cuda").manual_seed(T + hs)
    qkv = torch.randn((T, q_dim + 2 * kv_dim), device="cuda", generator=g).half()
    cache_k = torch.full((cfg.seq_len, kv_dim), float("nan"), device="cuda").half()
    cache_v = cache_k.clone()
    cache_k[:pos0] = torch.randn((pos0, kv_dim), device="cuda", generator=g).half()     # an earlier context
    cache_v[:pos0] = torch.randn((pos0, kv_dim), device="cuda", generator=g).half()
    cs = rope_table(cfg, "cuda")
    out = torch.full((T, q_dim), float("nan"), device="cuda").half()
    rope_kv, attn = LoadedKernel(pk.rope_kv_spec(info.arch), builder), LoadedKernel(pk.attention_spec(hs, info.arch), builder)
    s = Stream.from_handle(torch.cuda.current_stream().cuda_stream)
    i32 = np.int32
    rope_kv.launch(s, (T, 1, 1), ptr(cache_k), ptr(cache_v), ptr(qkv), ptr(cs), i32(pos0), i32(q_dim), i32(kv_dim), i32(hs))
    attn.launch(s, pk.attention_grid(T, n_heads), ptr(out), ptr(qkv), ptr(cache_k), ptr(cache_v), ptr(cs), i32(pos0),
                i32(T), i32(n_heads), i32(kv_dim), i32(n_heads // n_kv))
    torch.cuda.synchronize()
    want, K, V = _attention_reference(qkv, cs, pos0, cache_k[:pos0].view(pos0, n_kv, hs),
                                      cache_v[:pos0].view(pos0, n_kv, hs), n_heads, n_kv, hs)
    torch.testing.assert_close(out.double(), want, rtol=0, atol=4e-3)
    # k: rotated in float32 here, in float64 there, then both rounded to fp16: a last-bit difference at most
    torch.testing.assert_close(cache_k[:pos0 + T].double().view(-1, n_kv, hs), K, rtol=1e-3, atol=1e-3)
    torch.testing.assert_close(cache_v[:pos0 + T].double().view(-1, n_kv, hs), V, rtol=0, atol=0)


@pytest.mark.parametrize("nibbles, ln, lk", [("natural", 1, 1), ("k", 8, 2), ("rows", 4, 8), ("rows", 1, 1)])
def test_dequant_q4_kernel_in_every_layout(builder, nibbles, ln, lk):
    from cuda.core import Stream

    from autosched import layouts
    from autosched.device import query
    from autosched.launch import LoadedKernel
    from autosched.runtime import ptr
    from autosched.templates import prefill as pk
    from autosched.workloads import GemvQ4F16
    w = GemvQ4F16(64, 512)
    x = w.inputs(seed=4)
    a_q = torch.from_numpy(layouts.apply("q4_words", {"n": ln, "k": lk, "nibbles": nibbles}, x["A_q"]).view(np.int32)).cuda()
    a_s = torch.from_numpy(layouts.apply("q4_scales", {"n": ln}, x["A_scale"])).cuda()
    out = torch.full((64, 512), float("nan"), device="cuda").half()
    info = query(0)
    k = LoadedKernel(pk.dequant_q4_spec(info.arch), builder)
    k.launch(Stream.from_handle(torch.cuda.current_stream().cuda_stream), pk.elementwise_grid(64 * 64, info.sm_count), ptr(out),
             ptr(a_q), ptr(a_s), np.int32(64), np.int32(512), np.int32(pk.NIBBLE_CODES[nibbles]), np.int32(ln),
             np.int32(lk))
    torch.cuda.synchronize()
    want = w.dequantize(x["A_q"], x["A_scale"]).astype(np.float16)
    np.testing.assert_array_equal(out.cpu().numpy(), want)


@pytest.mark.parametrize("n, k", [(4096, 4096), (96, 288)])
@pytest.mark.parametrize("M", [1, 7, 64, 100, 300, 1000])
def test_linear_matches_torch(n, k, M):
    from autosched.ops import linear
    g = torch.Generator(device="cuda").manual_seed(M)
    x = torch.randn((M, k), device="cuda", generator=g).half()
    w = (torch.randn((n, k), device="cuda", generator=g) / k ** 0.5).half()
    want = (x.double() @ w.double().t())
    torch.testing.assert_close(linear(x, w).double(), want, rtol=0, atol=1e-2 * float(want.abs().max()))


def test_dispatched_micro_kernels_match_torch(builder):
    """Every micro-kernel a (synthetic) dynamic result selects, launched through HgemmDispatch for Ms
    across its range."""
    from cuda.core import Stream

    from autosched.device import query
    from autosched.dynamic.synthetic import SyntheticRunner
    from autosched.dynamic.tune import tune_dynamic
    from autosched.dynamic.workload import DynamicWorkload
    from autosched.ops import HgemmDispatch
    from autosched.templates.hgemm_dyn import HgemmDynTemplate
    info = query(0)
    dw = DynamicWorkload.parse("hgemm", "Mx1024x512_bt", (1, 2048))
    res = tune_dynamic(dw, HgemmDynTemplate(), SyntheticRunner(info), None, rounds=1, per_round=6)
    gd = HgemmDispatch(1024, 512, info, result=res, m_max=2048)
    gd.load(builder)
    s = Stream.from_handle(torch.cuda.current_stream().cuda_stream)
    w = (torch.randn((1024, 512), device="cuda") / 512 ** 0.5).half()
    seen = set()
    for M in (1, 3, 17, 64, 129, 500, 1000, 2048):
        x = torch.randn((M, 512), device="cuda").half()
        y = torch.full((M, 1024), float("nan"), device="cuda").half()
        gd(s, x, w, y, M)
        torch.cuda.synchronize()
        want = x.double() @ w.double().t()
        torch.testing.assert_close(y.double(), want, rtol=0, atol=1e-2 * float(want.abs().max()))
        seen.add(gd.index(M))
    assert seen
