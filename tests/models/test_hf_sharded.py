"""Hugging Face checkpoints as the Hub shards them (bf16, model-0000k-of-0000n.safetensors with
model.safetensors.index.json), read memory-mapped a layer at a time: the same weights as the
float32 single-file directory, no whole float32 copy in the process's own memory, and a broken index
named in its error."""

import json
import struct
from pathlib import Path

import numpy as np
import pytest

from autosched.models.hf import HFError, LayerStack, hf_config, hf_state_dict, read_hf, write_hf
from autosched.models.llama2c import LlamaConfig, random_weights

CFG = LlamaConfig(512, 1536, 8, 8, 4, 1000, 64, shared_classifier=False)


def _bf16(a: np.ndarray) -> bytes:
    """float32 -> bf16 bits (rounded to nearest even), little-endian."""
    u = np.ascontiguousarray(a, dtype="<f4").view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    return u.astype("<u2").tobytes()


def _write_bf16(path: Path, tensors: dict) -> None:
    header, blobs, off = {}, [], 0
    for name, t in tensors.items():
        data = _bf16(t)
        header[name] = {"dtype": "BF16", "shape": list(t.shape), "data_offsets": [off, off + len(data)]}
        blobs.append(data)
        off += len(data)
    head = json.dumps(header, separators=(",", ":")).encode()
    head += b" " * (-len(head) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(head)) + head + b"".join(blobs))


def write_sharded(d: Path, cfg: LlamaConfig, w: dict, shards: int = 3) -> dict:
    """The Hub's layout: config.json, bf16 shards and their index; returns the state dict written."""
    d.mkdir(parents=True, exist_ok=True)
    (d / "config.json").write_text(json.dumps(hf_config(cfg)))
    sd = {k: np.asarray(v, dtype=np.float32) for k, v in hf_state_dict(cfg, w).items()}
    names = list(sd)
    weight_map = {}
    for k in range(shards):
        part = names[k::shards]
        fname = f"model-{k + 1:05d}-of-{shards:05d}.safetensors"
        _write_bf16(d / fname, {n: sd[n] for n in part})
        weight_map.update({n: fname for n in part})
    (d / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))
    return sd


def _bf16_round(a):
    u = np.ascontiguousarray(a, dtype="<f4").view(np.uint32).astype(np.uint64)
    u = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) << 16
    return u.astype(np.uint32).view(np.float32)


@pytest.fixture(scope="module")
def sharded(tmp_path_factory):
    d = tmp_path_factory.mktemp("hub") / "llama"
    w = random_weights(CFG, 5)
    write_sharded(d, CFG, w)
    single = tmp_path_factory.mktemp("single") / "llama"
    write_hf(single, CFG, {k: _bf16_round(v) for k, v in w.items()})     # the same values, float32, one file
    return d, single


def test_shards_read_as_the_single_file_does(sharded):
    d, single = sharded
    cfg, w = read_hf(d)
    cfg1, w1 = read_hf(single)
    assert cfg == cfg1 == CFG
    assert isinstance(w["wq"], LayerStack) and w["wq"].shape == (CFG.n_layers, CFG.dim, CFG.dim)
    for name in w1:
        np.testing.assert_array_equal(np.asarray(w[name]), np.asarray(w1[name]), err_msg=name)
    np.testing.assert_array_equal(w["wk"][3], np.asarray(w1["wk"])[3])     # a layer alone, RoPE rows reordered


def _rss_anon_kb() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("RssAnon:"):
            return int(line.split()[1])
    pytest.skip("no RssAnon in /proc/self/status")


def test_a_load_keeps_no_whole_float32_copy(sharded):
    d, _ = sharded
    whole_kb = 4 * CFG.n_params() // 1024                          # the float32 model: ~108 MB
    before = _rss_anon_kb()
    cfg, w = read_hf(d)
    peak = _rss_anon_kb() - before
    for name in ("wq", "wk", "wv", "wo", "w1", "w2", "w3"):       # the engine's walk: a layer at a time
        for i in range(cfg.n_layers):
            assert w[name][i].dtype == np.float32
            peak = max(peak, _rss_anon_kb() - before)
    layer_kb = 4 * CFG.hidden_dim * CFG.dim // 1024
    assert peak < whole_kb // 4 and peak < 2 * (4 * CFG.vocab_size * CFG.dim // 1024) + 8 * layer_kb, (peak, whole_kb)


def test_a_broken_index_names_the_missing_shard(sharded, tmp_path):
    d, _ = sharded
    bad = tmp_path / "bad"
    bad.mkdir()
    for f in d.iterdir():
        (bad / f.name).write_bytes(f.read_bytes())
    (bad / "model-00002-of-00003.safetensors").unlink()
    with pytest.raises(HFError, match="model-00002-of-00003.safetensors, which is not in"):
        read_hf(bad)
    (bad / "model.safetensors.index.json").write_text("[1, 2]")
    with pytest.raises(HFError, match="shard index"):
        read_hf(bad)
