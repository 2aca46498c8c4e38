"""Hugging Face Llama directories: round trips with llama2.c weights, the RoPE row permutation
checked against HF's own semantics (rotate_half), bf16 safetensors, and - where transformers is
installed - LlamaForCausalLM's logits."""

import json
import struct

import numpy as np
import pytest

from autosched.models.hf import HFError, read_hf, read_safetensors, write_hf, write_safetensors
from autosched.models.llama2c import LlamaConfig, random_weights
from autosched.models.reference import ReferenceDecoder

CFG = LlamaConfig(dim=32, hidden_dim=64, n_layers=2, n_heads=4, n_kv_heads=2, vocab_size=50, seq_len=16)
TOKENS = [1, 7, 3, 42, 9, 9, 0, 11]


@pytest.mark.parametrize("shared", [True, False])
def test_round_trip_through_an_hf_directory(tmp_path, shared):
    cfg = LlamaConfig(**{**CFG.__dict__, "shared_classifier": shared})
    w = random_weights(cfg, 4)
    cfg2, w2 = read_hf(write_hf(tmp_path / "hf", cfg, w))
    assert cfg2 == cfg
    assert set(w2) == set(w)
    for k in w:
        np.testing.assert_array_equal(w2[k], w[k])
    conf = json.loads((tmp_path / "hf" / "config.json").read_text())
    assert conf["num_key_value_heads"] == 2 and conf["tie_word_embeddings"] == shared


def hf_forward(conf, t, tokens):
    """HF Llama semantics straight from the safetensors names: rotate_half RoPE, no permutation."""
    d, H, KV = conf["hidden_size"], conf["num_attention_heads"], conf["num_key_value_heads"]
    hs, T, eps = d // H, len(tokens), conf["rms_norm_eps"]
    t = {k: v.astype(np.float64) for k, v in t.items()}

    def norm(x, g):
        return x / np.sqrt((x ** 2).mean(-1, keepdims=True) + eps) * g

    inv = conf["rope_theta"] ** (-np.arange(0, hs, 2) / hs)
    ang = np.concatenate([np.outer(np.arange(T), inv)] * 2, axis=1)          # (T, hs)
    cos, sin = np.cos(ang)[:, None, :], np.sin(ang)[:, None, :]

    def rope(x):                                                               # (T, heads, hs)
        rot = np.concatenate([-x[..., hs // 2:], x[..., :hs // 2]], axis=-1)
        return x * cos + rot * sin

    x = t["model.embed_tokens.weight"][tokens]
    mask = np.triu(np.full((T, T), -np.inf), 1)
    for i in range(conf["num_hidden_layers"]):
        p = f"model.layers.{i}."
        h = norm(x, t[p + "input_layernorm.weight"])
        q = rope((h @ t[p + "self_attn.q_proj.weight"].T).reshape(T, H, hs))
        k = np.repeat(rope((h @ t[p + "self_attn.k_proj.weight"].T).reshape(T, KV, hs)), H // KV, axis=1)
        v = np.repeat((h @ t[p + "self_attn.v_proj.weight"].T).reshape(T, KV, hs), H // KV, axis=1)
        s = np.einsum("thd,uhd->htu", q, k) / np.sqrt(hs) + mask
        a = np.exp(s - s.max(-1, keepdims=True))
        a /= a.sum(-1, keepdims=True)
        x = x + np.einsum("htu,uhd->thd", a, v).reshape(T, -1) @ t[p + "self_attn.o_proj.weight"].T
        h = norm(x, t[p + "post_attention_layernorm.weight"])
        g = h @ t[p + "mlp.gate_proj.weight"].T
        x = x + (g / (1 + np.exp(-g)) * (h @ t[p + "mlp.up_proj.weight"].T)) @ t[p + "mlp.down_proj.weight"].T
    head = t.get("lm_head.weight", t["model.embed_tokens.weight"])
    return norm(x, t["model.norm.weight"]) @ head.T


def test_permuted_rows_make_llama2c_rope_equal_hf_rope(tmp_path):
    w = random_weights(CFG, 5)
    d = write_hf(tmp_path / "hf", CFG, w)
    want = hf_forward(json.loads((d / "config.json").read_text()), read_safetensors(d / "model.safetensors"), TOKENS)
    dec = ReferenceDecoder(CFG, w)
    got = np.stack([dec.step(tok) for tok in TOKENS])
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)


def test_bf16_safetensors_load_as_float32(tmp_path):
    vals = np.array([1.0, -2.5, 3.140625, 0.0], dtype=np.float32)      # exact in bf16
    head = json.dumps({"x": {"dtype": "BF16", "shape": [2, 2], "data_offsets": [0, 8]}}).encode()
    bf16 = (vals.view(np.uint32) >> 16).astype("<u2").tobytes()
    (tmp_path / "a.safetensors").write_bytes(struct.pack("<Q", len(head)) + head + bf16)
    np.testing.assert_array_equal(read_safetensors(tmp_path / "a.safetensors")["x"], vals.reshape(2, 2))
    write_safetensors(tmp_path / "b.safetensors", {"y": vals})
    np.testing.assert_array_equal(read_safetensors(tmp_path / "b.safetensors")["y"], vals)


def test_transformers_logits_match_the_reference(tmp_path):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    w = random_weights(CFG, 6)
    d = write_hf(tmp_path / "hf", CFG, w)
    model = transformers.LlamaForCausalLM.from_pretrained(d, torch_dtype=torch.float64).eval()
    with torch.no_grad():
        hf = model(torch.tensor([TOKENS])).logits[0].numpy()
    dec = ReferenceDecoder(CFG, w)
    ours = np.stack([dec.step(tok) for tok in TOKENS])
    # float64 model, but transformers builds its RoPE frequencies in float32: ~1e-7 relative, so the
    # bound is float32-tight, not float64-tight (a wrong permutation or norm is off by O(1))
    assert np.abs(hf - ours).max() < 5e-6 * np.abs(ours).max()
    assert (hf.argmax(-1) == ours.argmax(-1)).all()


def test_convert_command_both_ways(tmp_path):
    from autosched.cli import main
    from autosched.models.llama2c import read_checkpoint, write_checkpoint
    w = random_weights(CFG, 7)
    write_checkpoint(tmp_path / "a.bin", CFG, w)
    assert main(["convert", str(tmp_path / "a.bin"), str(tmp_path / "hf")]) == 0
    assert main(["convert", str(tmp_path / "hf"), str(tmp_path / "b.bin")]) == 0
    assert (tmp_path / "a.bin").read_bytes() == (tmp_path / "b.bin").read_bytes()
    cfg, w2 = read_checkpoint(tmp_path / "b.bin")
    assert cfg == CFG
    assert main(["convert", str(tmp_path / "missing.bin"), str(tmp_path / "x")]) == 2


# -- corrupt directories: an HFError (a ValueError) naming the file and the tensor ----------------

def edit_config(**change):
    def f(d):
        conf = json.loads((d / "config.json").read_text())
        conf.update(change)
        (d / "config.json").write_text(json.dumps({k: v for k, v in conf.items() if v is not DROP}))
    return f


DROP = object()


def edit_tensors(fn):
    def f(d):
        t = read_safetensors(d / "model.safetensors")
        fn(t)
        write_safetensors(d / "model.safetensors", t)
    return f


def truncate(keep):
    def f(d):
        raw = (d / "model.safetensors").read_bytes()
        (d / "model.safetensors").write_bytes(raw[:keep(len(raw))])
    return f


UP1 = "model.layers.1.mlp.up_proj.weight"
DOWN0 = "model.layers.0.mlp.down_proj.weight"
# (spoil the directory, the file the message names, what else it says)
CORRUPT = {
    "no config.json": (lambda d: (d / "config.json").unlink(), "config.json", "is missing"),
    "config not JSON": (lambda d: (d / "config.json").write_text("{hidden_size: 32"), "config.json",
                        "not valid JSON"),
    "config a list": (lambda d: (d / "config.json").write_text("[1, 2]"), "config.json", "not a model config"),
    "config lacks fields": (edit_config(hidden_size=DROP, vocab_size=DROP), "config.json",
                            "missing hidden_size, vocab_size"),
    "config size a string": (edit_config(num_hidden_layers="2"), "config.json", "num_hidden_layers is '2'"),
    "config heads do not divide": (edit_config(num_attention_heads=5), "config.json", "not a multiple"),
    "no safetensors": (lambda d: (d / "model.safetensors").unlink(), "hf", "no *.safetensors"),
    "safetensors cut in half": (truncate(lambda n: n // 2), "model.safetensors", "truncated"),
    "safetensors cut to 4 bytes": (truncate(lambda n: 4), "model.safetensors", "too short"),
    "safetensors cut in its header": (truncate(lambda n: 200), "model.safetensors", "truncated"),
    "tensor of the wrong shape": (edit_tensors(lambda t: t.update({UP1: t[UP1][:, :16]})), "model.safetensors",
                                  f"tensor {UP1} has shape (64, 16), but config.json makes it (64, 32)"),
    # the same wrong shape in every layer passed silently before
    "transposed in every layer": (edit_tensors(lambda t: t.update({k: v.T.copy() for k, v in t.items()
                                                                    if "down_proj" in k})),
                                  "model.safetensors", f"tensor {DOWN0} has shape (64, 32)"),
    "tensor missing": (edit_tensors(lambda t: t.pop(UP1)), "hf", f"tensor {UP1} is missing"),
    "lm_head of the wrong shape": (edit_tensors(lambda t: t.update({"lm_head.weight": t["lm_head.weight"][:10]})),
                                   "model.safetensors", "tensor lm_head.weight has shape (10, 32)"),
}


@pytest.mark.parametrize("case", list(CORRUPT))
def test_corrupt_directory_names_the_file_and_tensor(tmp_path, case):
    spoil, file, says = CORRUPT[case]
    untied = LlamaConfig(**{**CFG.__dict__, "shared_classifier": False})
    d = write_hf(tmp_path / "hf", untied, random_weights(untied, 3))
    spoil(d)
    with pytest.raises(HFError) as e:
        read_hf(d)
    assert isinstance(e.value, ValueError)
    msg = str(e.value)
    assert msg.startswith(str(d / file) if file != "hf" else str(d)) and says in msg, msg
    assert "\n" not in msg


def test_safetensors_header_with_bad_offsets_names_the_tensor(tmp_path):
    head = json.dumps({"x": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 8]}}).encode()
    p = tmp_path / "x.safetensors"
    p.write_bytes(struct.pack("<Q", len(head)) + head + bytes(8))
    with pytest.raises(HFError, match=r"x.safetensors: tensor x has 8 bytes, but shape \[2, 2\] of F32 needs 16"):
        read_safetensors(p)


def test_convert_of_a_corrupt_directory_is_an_error_message(tmp_path, capsys):
    from autosched.cli import main
    d = write_hf(tmp_path / "hf", CFG, random_weights(CFG, 2))
    (d / "config.json").write_text("{")
    assert main(["convert", str(d), str(tmp_path / "out.bin")]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "config.json: not valid JSON" in err and "Traceback" not in err
    assert not (tmp_path / "out.bin").exists()


# -- Llama-3-style configs: rope_theta 500000, llama3 rope scaling, tied or untied, vocab 128256 ------

L3_SCALING = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
              "original_max_position_embeddings": 16}


def llama3_cfg(tied: bool, vocab: int = 128256):
    from autosched.models.rope import RopeScaling
    # head size 16: wavelengths 6.3 (between 16/4 and 16/1: blended), 32 and up (slowed by 8), so the
    # scaling moves every pair's angle within the first tokens
    return LlamaConfig(dim=32, hidden_dim=64, n_layers=2, n_heads=2, n_kv_heads=1, vocab_size=vocab, seq_len=64,
                       shared_classifier=tied, rope_theta=500000.0,
                       rope_scaling=RopeScaling(8.0, 1.0, 4.0, 16))


def test_llama3_frequencies_by_hand():
    from autosched.models.rope import inv_freq
    cfg = llama3_cfg(True, 64)
    plain = 500000.0 ** (-np.arange(0, 16, 2) / 16)
    got = inv_freq(cfg)
    wavelen = 2 * np.pi / plain
    slow = wavelen > 16
    np.testing.assert_allclose(got[slow], plain[slow] / 8)            # long waves: slowed by the factor
    smooth = (16 / wavelen[0] - 1) / (4 - 1)                           # 6.28 is between 16/4 and 16/1
    np.testing.assert_allclose(got[0], (1 - smooth) * plain[0] / 8 + smooth * plain[0])
    unscaled = LlamaConfig(**{**cfg.__dict__, "rope_scaling": None})
    np.testing.assert_allclose(inv_freq(unscaled), plain)
    torch = pytest.importorskip("torch")
    np.testing.assert_allclose(inv_freq(cfg, torch).numpy(), got, rtol=1e-6)
    from autosched.engine.engine import rope_table
    cs = rope_table(cfg, "cpu").numpy()                                # the engine's (pos, pair, cos/sin)
    np.testing.assert_allclose(cs[5, :, 0], np.cos(5 * got), atol=1e-6)


@pytest.mark.parametrize("tied", [True, False])
def test_a_llama3_directory_round_trips(tmp_path, tied):
    cfg = llama3_cfg(tied, 300)
    w = random_weights(cfg, 8)
    cfg2, w2 = read_hf(write_hf(tmp_path / "hf", cfg, w))
    assert cfg2 == cfg and ("wcls" in w2) == (not tied)
    conf = json.loads((tmp_path / "hf" / "config.json").read_text())
    assert conf["rope_scaling"] == L3_SCALING and conf["rope_theta"] == 500000.0


@pytest.mark.parametrize("change, needle", [
    ({"rope_scaling": {"rope_type": "yarn", "factor": 4.0}}, "'yarn' is not supported"),
    ({"rope_scaling": {"rope_type": "llama3", "factor": 8.0}}, "missing low_freq_factor"),
    ({"rope_scaling": [1, 2]}, "not an object"),
    ({"rope_theta": "big"}, "rope_theta"),
    ({"head_dim": 8}, "head_dim 8"),
])
def test_unsupported_rope_configs_are_refused_naming_the_field(tmp_path, change, needle):
    d = write_hf(tmp_path / "hf", llama3_cfg(True, 300), random_weights(llama3_cfg(True, 300), 9))
    conf = json.loads((d / "config.json").read_text())
    conf.update(change)
    (d / "config.json").write_text(json.dumps(conf))
    with pytest.raises(HFError, match="config.json.*" + needle.replace("(", ".").replace(")", ".")):
        read_hf(d)


@pytest.mark.parametrize("tied", [True, False])
def test_transformers_llama3_logits_match_in_fp32(tmp_path, tied):
    """A tiny random Llama-3 model built and saved by transformers (its own config.json, whichever
    version writes it) loads here and gives its logits in float32."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    conf = transformers.LlamaConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
                                    num_key_value_heads=1, vocab_size=128256, max_position_embeddings=64,
                                    rope_theta=500000.0, rope_scaling=dict(L3_SCALING), tie_word_embeddings=tied,
                                    rms_norm_eps=1e-5)
    model = transformers.LlamaForCausalLM(conf).float().eval()
    with torch.no_grad():
        for p in model.parameters():          # weights of trained scale, not the init's tiny ones
            p.copy_(torch.randn_like(p) * (0.3 if p.ndim > 1 else 0.1) + (1.0 if p.ndim == 1 else 0.0))
    model.save_pretrained(tmp_path / "hf", safe_serialization=True)
    cfg, w = read_hf(tmp_path / "hf")
    assert cfg == llama3_cfg(tied)
    with torch.no_grad():
        hf = model(torch.tensor([TOKENS])).logits[0].numpy()
    dec = ReferenceDecoder(cfg, w, dtype=np.float32)
    ours = np.stack([dec.step(tok) for tok in TOKENS])
    assert np.abs(hf - ours).max() < 1e-4 * np.abs(hf).max()
    assert (hf.argmax(-1) == ours.argmax(-1)).all()
    # and without the scaling they would not match: the test sees the frequencies
    plain = LlamaConfig(**{**cfg.__dict__, "rope_scaling": None})
    dec = ReferenceDecoder(plain, w, dtype=np.float32)
    off = np.stack([dec.step(tok) for tok in TOKENS])
    assert np.abs(hf - off).max() > 100 * np.abs(hf - ours).max()
