"""llama2.c checkpoint and tokenizer formats; the reference decoder against an independent
full-sequence forward (complex-number RoPE, causal mask, no cache)."""

import struct

import numpy as np
import pytest

from autosched.models.llama2c import SEED_CONFIGS, LlamaConfig, Tokenizer, random_weights, read_checkpoint, \
    write_checkpoint
from autosched.models.reference import ReferenceDecoder

SMALL = LlamaConfig(dim=32, hidden_dim=64, n_layers=2, n_heads=4, n_kv_heads=2, vocab_size=50, seq_len=16)


@pytest.mark.parametrize("shared", [True, False])
def test_checkpoint_round_trip(tmp_path, shared):
    cfg = LlamaConfig(**{**SMALL.__dict__, "shared_classifier": shared})
    w = random_weights(cfg, seed=1)
    p = write_checkpoint(tmp_path / "m.bin", cfg, w)
    head = struct.unpack("<7i", p.read_bytes()[:28])
    assert head == (32, 64, 2, 4, 2, 50 if shared else -50, 16)
    cfg2, w2 = read_checkpoint(p)
    assert cfg2 == cfg
    assert set(w2) == set(w) == set(cfg.shapes())
    for k in w:
        np.testing.assert_array_equal(w2[k], w[k])


def test_bad_checkpoints_are_refused(tmp_path):
    p = write_checkpoint(tmp_path / "m.bin", SMALL, random_weights(SMALL, 0))
    (tmp_path / "short.bin").write_bytes(p.read_bytes()[:-4])
    with pytest.raises(ValueError, match="bytes"):
        read_checkpoint(tmp_path / "short.bin")
    (tmp_path / "tiny.bin").write_bytes(b"\0" * 10)
    with pytest.raises(ValueError, match="too short"):
        read_checkpoint(tmp_path / "tiny.bin")
    with pytest.raises(ValueError, match="n_kv_heads"):
        LlamaConfig(32, 64, 2, 4, 3, 50, 16)
    with pytest.raises(ValueError, match="multiple of n_heads"):
        LlamaConfig(30, 64, 2, 4, 4, 50, 16)


def test_seed_configs_have_the_documented_sizes():
    assert SEED_CONFIGS["stories15M"].n_params() == 15_191_712      # the "15M" of its name
    assert SEED_CONFIGS["llama2-7b"].n_params() == 6_738_415_616


def small_tokenizer():
    vocab = [b"<unk>", b"<s>", b"</s>"] + [f"<0x{i:02X}>".encode() for i in range(256)]
    extra = [(b" ", -1.0), (b"a", -1.0), (b"b", -1.0), (b"ab", -0.5), (b" ab", -0.2), (b"\xc3\xa9", -1.0)]
    return Tokenizer(vocab + [t for t, _ in extra], [0.0] * 259 + [s for _, s in extra], max_token_length=3)


def test_tokenizer_round_trip_encode_decode(tmp_path):
    tok = small_tokenizer()
    t2 = Tokenizer.load(tok.save(tmp_path / "tok.bin"))
    assert t2.vocab == tok.vocab and t2.max_token_length == 3
    assert np.allclose(t2.scores, tok.scores)
    ids = t2.encode("ab abé!")
    ab, sp_ab, e_acute = (tok.vocab.index(x) for x in (b"ab", b" ab", b"\xc3\xa9"))
    # " ab" merges first (best score), then "ab"; "!" is not in the vocabulary: byte fallback 3 + 0x21
    assert ids == [1, sp_ab, sp_ab, e_acute, 3 + ord("!")]
    text = b"".join(t2.decode(p, t) for p, t in zip(ids, ids[1:]))
    assert text.decode() == "ab abé!"
    assert t2.encode("", bos=False) == []


def full_forward(cfg, w, tokens):
    """Logits of every position at once: no cache, RoPE by complex rotation, causal mask."""
    hs, T = cfg.head_size, len(tokens)
    w = {k: v.astype(np.float64) for k, v in w.items()}

    def norm(x, g):
        return x / np.sqrt((x ** 2).mean(-1, keepdims=True) + cfg.norm_eps) * g

    def rot(x):   # (T, heads*hs)
        z = x.reshape(T, -1, hs // 2, 2)
        z = z[..., 0] + 1j * z[..., 1]
        ang = np.arange(T)[:, None, None] * cfg.rope_theta ** (-np.arange(0, hs, 2) / hs)[None, None, :]
        z = z * np.exp(1j * ang)
        return np.stack([z.real, z.imag], -1).reshape(T, -1)

    x = w["token_embedding"][tokens]
    mask = np.triu(np.full((T, T), -np.inf), 1)
    rep = cfg.n_heads // cfg.n_kv_heads
    for l in range(cfg.n_layers):
        h = norm(x, w["rms_att"][l])
        q = rot(h @ w["wq"][l].T).reshape(T, cfg.n_heads, hs)
        k = np.repeat(rot(h @ w["wk"][l].T).reshape(T, cfg.n_kv_heads, hs), rep, axis=1)
        v = np.repeat((h @ w["wv"][l].T).reshape(T, cfg.n_kv_heads, hs), rep, axis=1)
        s = np.einsum("thd,uhd->htu", q, k) / np.sqrt(hs) + mask
        p = np.exp(s - s.max(-1, keepdims=True))
        p /= p.sum(-1, keepdims=True)
        x = x + np.einsum("htu,uhd->thd", p, v).reshape(T, -1) @ w["wo"][l].T
        h = norm(x, w["rms_ffn"][l])
        g = h @ w["w1"][l].T
        x = x + (g / (1 + np.exp(-g)) * (h @ w["w3"][l].T)) @ w["w2"][l].T
    return norm(x, w["rms_final"]) @ w.get("wcls", w["token_embedding"]).T


@pytest.mark.parametrize("shared", [True, False])
def test_cached_decoding_matches_the_full_forward(shared):
    cfg = LlamaConfig(**{**SMALL.__dict__, "shared_classifier": shared})
    w = random_weights(cfg, seed=2)
    tokens = [1, 7, 3, 42, 9, 9, 0, 11, 30, 5]
    want = full_forward(cfg, w, tokens)
    dec = ReferenceDecoder(cfg, w)
    got = np.stack([dec.step(t) for t in tokens])
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)
    assert np.std(want[-1]) > 0.1          # logits that carry information, not a constant
    with pytest.raises(ValueError, match="vocabulary"):
        dec.step(50)


def test_greedy_generation_stops_at_the_context():
    dec = ReferenceDecoder(SMALL, random_weights(SMALL, seed=3))
    out = dec.generate([1, 5], steps=100)
    assert len(out) == SMALL.seq_len and out[:2] == [1, 5]
    assert all(0 <= t < SMALL.vocab_size for t in out)
    dec2 = ReferenceDecoder(SMALL, random_weights(SMALL, seed=3))
    assert dec2.generate([1, 5], steps=100) == out          # deterministic


@pytest.mark.parametrize("field", ["n_heads", "n_kv_heads", "dim"])
def test_a_zero_size_is_an_invalid_config_not_a_division_by_zero(field):
    """A corrupted header can say 0 heads (found by tests/fuzz): a ValueError naming the problem."""
    sizes = dict(dim=16, hidden_dim=32, n_layers=1, n_heads=2, n_kv_heads=2, vocab_size=32, seq_len=8)
    with pytest.raises(ValueError, match="every size must be >= 1"):
        LlamaConfig(**{**sizes, field: 0})
