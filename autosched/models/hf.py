"""Hugging Face Llama checkpoint directories (config.json + *.safetensors) <-> llama2.c weights.

Weights are held in llama2.c's convention (autosched.models.llama2c).  The one real difference is
RoPE: llama2.c rotates adjacent pairs (2i, 2i+1) of a head, HF rotates (i, i + hs/2) ("rotate
half"), so the rows of wq and wk are permuted on the way between the two.  safetensors is read and
written here directly (an 8-byte header length, a JSON header, raw little-endian data), so bf16
checkpoints load without torch.  Files are memory-mapped and the per-layer matrices read a layer at
a time (LayerStack), so a 7B checkpoint's float32 copy never sits in host memory whole; Hub shards
(model-0000k-of-0000n.safetensors) are read through their model.safetensors.index.json.
"""

from __future__ import annotations

import json
import math
import struct
from pathlib import Path

import numpy as np

from autosched.models.llama2c import LlamaConfig
from autosched.models.rope import RopeScaling

_DTYPES = {"F32": np.dtype("<f4"), "F16": np.dtype("<f2"), "BF16": np.dtype("<u2"), "F64": np.dtype("<f8")}


class HFError(ValueError):
    """A Hugging Face directory that cannot be read: the message names the file (and the tensor)."""


def safetensors_header(path) -> tuple[dict[str, tuple[str, list[int], int, int]], int]:
    """({tensor: (dtype, shape, start, end)}, where the data starts) of a safetensors file, from its
    header alone; HFError naming the file and the tensor for a header that is not one, a tensor
    whose byte span is not its dtype x shape, or a span past the end of the file.  The header's
    claimed length is checked against the file before it is read (a damaged length read as is
    asks for petabytes)."""
    path = Path(path)
    try:
        size = path.stat().st_size
        with open(path, "rb") as f:
            head = f.read(8)
            if len(head) < 8:
                raise HFError(f"{path}: {len(head)} bytes, too short for a safetensors file (truncated?)")
            (n,) = struct.unpack("<Q", head)
            if 8 + n > size:
                raise HFError(f"{path}: truncated or not safetensors (its header claims {n:,} bytes, the file "
                              f"has {size:,})")
            text = f.read(n)
    except OSError as e:
        raise HFError(f"{path}: cannot read it ({e.strerror})") from e
    try:
        header = json.loads(text)
    except ValueError as e:                         # not JSON, or not UTF-8
        raise HFError(f"{path}: not a safetensors file (its header is not JSON: {e})") from e
    if not isinstance(header, dict):
        raise HFError(f"{path}: not a safetensors file (its header is not a JSON object)")
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        if not (isinstance(info, dict) and {"dtype", "shape", "data_offsets"} <= set(info)):
            raise HFError(f"{path}: tensor {name} has no dtype, shape and data_offsets")
        if info["dtype"] not in _DTYPES:
            raise HFError(f"{path}: tensor {name} has dtype {info['dtype']}, not one of {sorted(_DTYPES)}")
        shape, offsets = info["shape"], info["data_offsets"]
        if not (_ints(shape) and _ints(offsets) and len(offsets) == 2 and offsets[0] <= offsets[1]):
            raise HFError(f"{path}: tensor {name} has shape {shape!r} and data_offsets {offsets!r}")
        a, b = offsets
        need = math.prod(shape) * _DTYPES[info["dtype"]].itemsize
        if b - a != need:
            raise HFError(f"{path}: tensor {name} has {b - a:,} bytes, but shape {shape} of {info['dtype']} "
                          f"needs {need:,}")
        if 8 + n + b > size:
            raise HFError(f"{path}: truncated: tensor {name} ends at byte {8 + n + b:,}, the file has {size:,}")
        out[name] = (info["dtype"], shape, a, b)
    return out, 8 + n


def _as_float32(raw: np.ndarray, kind: str) -> np.ndarray:
    if kind == "BF16":      # bf16 is the top half of a float32
        return (raw.astype(np.uint32) << 16).view(np.float32)
    return raw.astype(np.float32)


class MappedTensor:
    """One tensor of a memory-mapped safetensors file, read (and converted to float32) only when
    asked: a checkpoint's bytes stay in the page cache, not in the process's own memory."""

    def __init__(self, mm: np.ndarray, kind: str, shape: list[int], start: int):
        self.mm, self.kind, self.shape, self.start = mm, kind, tuple(shape), start

    def load(self) -> np.ndarray:
        dtype = _DTYPES[self.kind]
        n = math.prod(self.shape)
        raw = np.frombuffer(self.mm, dtype=dtype, count=n, offset=self.start)
        return _as_float32(raw, self.kind).reshape(self.shape)


def map_safetensors(path) -> dict[str, MappedTensor]:
    """The tensors of a safetensors file, memory-mapped (nothing read but the header)."""
    header, start = safetensors_header(path)
    try:
        mm = np.memmap(path, dtype=np.uint8, mode="r")
    except (OSError, ValueError) as e:
        raise HFError(f"{path}: cannot map it ({e})") from e
    return {name: MappedTensor(mm, kind, shape, start + a) for name, (kind, shape, a, _) in header.items()}


def read_safetensors(path) -> dict[str, np.ndarray]:
    """Every tensor of a safetensors file as float32 (the whole file in memory: small files only)."""
    return {name: t.load() for name, t in map_safetensors(path).items()}


class LayerStack:
    """One matrix of every layer, (n_layers, *shape), read from its mapped tensors one layer at a
    time: stack[i] is layer i as a float32 array (RoPE rows reordered where the loader asked), so
    the engine packs a 7B model without its float32 copy in host memory.  np.asarray(stack) reads
    it whole, for callers that want the array."""

    def __init__(self, layers: list, rope_heads: int | None = None):
        self.layers, self.rope_heads = layers, rope_heads
        self.shape = (len(layers), *layers[0].shape)
        self.dtype, self.ndim = np.dtype(np.float32), len(self.shape)

    def __len__(self) -> int:
        return len(self.layers)

    def __getitem__(self, i):
        if isinstance(i, (int, np.integer)):
            w = self.layers[i].load()
            return _halves_to_pairs(w, self.rope_heads) if self.rope_heads else w
        return np.asarray(self)[i]

    def __array__(self, dtype=None, copy=None):
        out = np.stack([self[i] for i in range(len(self))])
        return out if dtype is None else out.astype(dtype)


def _weight_files(d: Path) -> list[Path]:
    """The safetensors files of a directory: those model.safetensors.index.json names, where it
    exists (sharded checkpoints as the Hub lays them out), else every *.safetensors."""
    index = d / "model.safetensors.index.json"
    if index.exists():
        try:
            m = json.loads(index.read_text()).get("weight_map")
        except (OSError, ValueError, AttributeError) as e:
            raise HFError(f"{index}: not readable as a shard index ({e})") from e
        if not isinstance(m, dict) or not all(isinstance(v, str) for v in m.values()):
            raise HFError(f"{index}: no weight_map of tensor names to files")
        files = [d / f for f in sorted(set(m.values()))]
        missing = [f.name for f in files if not f.exists()]
        if missing:
            raise HFError(f"{index} names {', '.join(missing)}, which {'is' if len(missing) == 1 else 'are'} not in {d}")
        return files
    files = sorted(d.glob("*.safetensors"))
    if not files:
        raise HFError(f"{d}: no *.safetensors files (model.safetensors holds the weights)")
    return files


def _ints(x) -> bool:
    return isinstance(x, list) and all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in x)


def write_safetensors(path, tensors: dict[str, np.ndarray]) -> Path:
    header, blobs, off = {}, [], 0
    for name, t in tensors.items():
        data = np.ascontiguousarray(t, dtype="<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(t.shape), "data_offsets": [off, off + len(data)]}
        blobs.append(data)
        off += len(data)
    head = json.dumps(header, separators=(",", ":")).encode()
    head += b" " * (-len(head) % 8)          # keep the data 8-byte aligned
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(head)) + head)
        for b in blobs:
            f.write(b)
    return Path(path)


def _halves_to_pairs(w: np.ndarray, heads: int) -> np.ndarray:
    """Rows of an HF q/k projection -> llama2.c order: row i and i + hs/2 of a head become 2i, 2i+1."""
    out, hs = w.shape[0], w.shape[0] // heads
    return w.reshape(heads, 2, hs // 2, -1).transpose(0, 2, 1, 3).reshape(out, -1)


def _pairs_to_halves(w, heads: int):
    """Inverse of _halves_to_pairs (numpy arrays or torch tensors)."""
    out, hs = w.shape[0], w.shape[0] // heads
    r = w.reshape(heads, hs // 2, 2, -1)
    r = r.permute(0, 2, 1, 3) if hasattr(r, "permute") else r.transpose(0, 2, 1, 3)
    return r.reshape(out, -1)


# config.json fields read_hf needs, and those it reads when present (with their kind)
_NEEDED = ("hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads", "vocab_size")
_OPTIONAL_INTS = ("num_key_value_heads", "max_position_embeddings")
_OPTIONAL_FLOATS = ("rms_norm_eps", "rope_theta")


def _read_config(d: Path) -> dict:
    path = d / "config.json"
    if not d.is_dir():
        raise HFError(f"{d}: not a directory (a Hugging Face Llama directory holds config.json and "
                      f"*.safetensors)")
    try:
        conf = json.loads(path.read_text())
    except FileNotFoundError as e:
        raise HFError(f"{path} is missing: a Hugging Face Llama directory holds config.json and "
                      f"*.safetensors") from e
    except OSError as e:
        raise HFError(f"{path}: cannot read it ({e.strerror})") from e
    except ValueError as e:                         # not JSON, or not UTF-8
        raise HFError(f"{path}: not valid JSON ({e})") from e
    if not isinstance(conf, dict):
        raise HFError(f"{path}: not a model config (a JSON object)")
    missing = [k for k in _NEEDED if k not in conf]
    if missing:
        raise HFError(f"{path}: missing {', '.join(missing)}, which a Llama config has")
    for k in _NEEDED + _OPTIONAL_INTS:
        v = conf.get(k, 1)
        if not isinstance(v, int) or isinstance(v, bool):
            raise HFError(f"{path}: {k} is {v!r}, not a whole number")
    for k in _OPTIONAL_FLOATS:
        v = conf.get(k, 1.0)
        if not isinstance(v, (int, float)) or isinstance(v, bool):
            raise HFError(f"{path}: {k} is {v!r}, not a number")
    return conf


def _llama_config(d: Path, conf: dict, tied: bool) -> LlamaConfig:
    arch = conf.get("architectures", ["LlamaForCausalLM"])
    if conf.get("model_type", "llama") != "llama" and "LlamaForCausalLM" not in arch:
        raise HFError(f"{d}: model_type {conf.get('model_type')!r} is not a Llama")
    heads = conf["num_attention_heads"]
    # transformers 4 writes rope_theta and rope_scaling; 5 writes both inside rope_parameters
    params = conf.get("rope_parameters")
    if params is not None and not isinstance(params, dict):
        raise HFError(f"{d / 'config.json'}: rope_parameters is {params!r}, not an object")
    params = params or {}
    theta = conf.get("rope_theta", params.get("rope_theta", 10000.0))
    if isinstance(theta, bool) or not isinstance(theta, (int, float)) or not theta > 0:
        raise HFError(f"{d / 'config.json'}: rope_theta is {theta!r}, not a number above 0")
    scaling = _rope_scaling(d / "config.json", conf["rope_scaling"] if conf.get("rope_scaling") is not None
                            else (params or None))
    head_dim = conf.get("head_dim")
    if head_dim is not None and head_dim != conf["hidden_size"] // heads:
        raise HFError(f"{d / 'config.json'}: head_dim {head_dim} is not hidden_size / num_attention_heads "
                      f"({conf['hidden_size']} / {heads}): autosched's heads split the hidden size evenly")
    try:
        return LlamaConfig(conf["hidden_size"], conf["intermediate_size"], conf["num_hidden_layers"], heads,
                           conf.get("num_key_value_heads", heads), conf["vocab_size"],
                           conf.get("max_position_embeddings", 2048), shared_classifier=tied,
                           norm_eps=conf.get("rms_norm_eps", 1e-5), rope_theta=float(theta),
                           rope_scaling=scaling)
    except ValueError as e:
        raise HFError(f"{d / 'config.json'}: {e}") from e


_LLAMA3_KEYS = ("factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings")


def _rope_scaling(path: Path, rs) -> RopeScaling | None:
    """config.json's rope_scaling: None (or type "default") for none, Llama-3's, or HFError naming
    what is not supported or not well formed."""
    if rs is None:
        return None
    if not isinstance(rs, dict):
        raise HFError(f"{path}: rope_scaling is {rs!r}, not an object")
    kind = rs.get("rope_type", rs.get("type"))
    if kind in (None, "default"):
        return None
    if kind != "llama3":
        raise HFError(f"{path}: rope_scaling type {kind!r} is not supported (autosched implements llama3)")
    missing = [k for k in _LLAMA3_KEYS if k not in rs]
    bad = [k for k in _LLAMA3_KEYS if k in rs and (isinstance(rs[k], bool) or not isinstance(rs[k], (int, float)))]
    if missing or bad:
        raise HFError(f"{path}: llama3 rope_scaling needs numbers {', '.join(_LLAMA3_KEYS)}"
                      + (f"; missing {', '.join(missing)}" if missing else "")
                      + (f"; not numbers: {', '.join(bad)}" if bad else ""))
    try:
        return RopeScaling(float(rs["factor"]), float(rs["low_freq_factor"]), float(rs["high_freq_factor"]),
                           int(rs["original_max_position_embeddings"]))
    except ValueError as e:
        raise HFError(f"{path}: {e}") from e


def _shapes(cfg: LlamaConfig) -> dict[str, tuple[int, ...]]:
    """HF tensor name -> the shape config.json makes it, for every tensor a Llama directory holds."""
    dim, hid, vocab, q, kv = cfg.dim, cfg.hidden_dim, cfg.vocab_size, cfg.n_heads * cfg.head_size, cfg.kv_dim
    out = {"model.embed_tokens.weight": (vocab, dim), "model.norm.weight": (dim,)}
    for i in range(cfg.n_layers):
        p = f"model.layers.{i}."
        out.update({p + "input_layernorm.weight": (dim,), p + "self_attn.q_proj.weight": (q, dim),
                    p + "self_attn.k_proj.weight": (kv, dim), p + "self_attn.v_proj.weight": (kv, dim),
                    p + "self_attn.o_proj.weight": (dim, q), p + "post_attention_layernorm.weight": (dim,),
                    p + "mlp.gate_proj.weight": (hid, dim), p + "mlp.down_proj.weight": (dim, hid),
                    p + "mlp.up_proj.weight": (hid, dim)})
    if not cfg.shared_classifier:
        out["lm_head.weight"] = (vocab, dim)
    return out


def _check_shapes(d: Path, files: list[Path], cfg: LlamaConfig, shapes: dict[str, tuple], where: dict) -> None:
    """HFError for the first tensor a Llama of `cfg` needs that is missing or not of its shape."""
    for name, want in _shapes(cfg).items():
        if name not in shapes:
            raise HFError(f"{d}: tensor {name} is missing (not in {', '.join(f.name for f in files)})")
        if tuple(shapes[name]) != want:
            raise HFError(f"{where[name]}: tensor {name} has shape {tuple(shapes[name])}, but config.json makes "
                          f"it {want}")


def read_hf_config(directory) -> LlamaConfig:
    """The config of a Hugging Face Llama directory, without reading its weights, checked against
    their headers: every tensor present, of the shape config.json makes it, its bytes in its file
    (a classifier is tied where config.json says so or no file holds lm_head.weight)."""
    d = Path(directory)
    conf = _read_config(d)
    files = _weight_files(d)
    shapes, where = {}, {}
    for f in files:
        for name, (_, shape, _, _) in safetensors_header(f)[0].items():
            shapes[name], where[name] = shape, f
    cfg = _llama_config(d, conf, tied=conf.get("tie_word_embeddings", False) or "lm_head.weight" not in shapes)
    _check_shapes(d, files, cfg, shapes, where)
    return cfg


def read_hf(directory) -> tuple[LlamaConfig, dict]:
    """(config, llama2.c weights) of a Hugging Face Llama directory (one file or Hub shards with
    their index), memory-mapped: the per-layer matrices are LayerStacks read a layer at a time, the
    norms, embedding and classifier float32 arrays.  HFError (a ValueError) naming the file, and the
    tensor, for one that is incomplete or does not match its config.json."""
    d = Path(directory)
    conf = _read_config(d)
    files = _weight_files(d)
    t, where = {}, {}
    for f in files:
        for name, arr in map_safetensors(f).items():
            t[name], where[name] = arr, f
    cfg = _llama_config(d, conf, tied=conf.get("tie_word_embeddings", False) or "lm_head.weight" not in t)
    _check_shapes(d, files, cfg, {k: v.shape for k, v in t.items()}, where)
    heads, kv_heads = cfg.n_heads, cfg.n_kv_heads
    L = range(cfg.n_layers)
    p = "model.layers.{}."

    def stack(name: str, rope_heads: int | None = None) -> LayerStack:
        """One tensor of every layer; q and k rows into llama2.c's RoPE order (over rope_heads)."""
        return LayerStack([t[p.format(i) + name] for i in L], rope_heads)

    def norms(name: str) -> np.ndarray:
        return np.stack([t[p.format(i) + name].load() for i in L])
    w = {
        "token_embedding": t["model.embed_tokens.weight"].load(),
        "rms_att": norms("input_layernorm.weight"),
        "wq": stack("self_attn.q_proj.weight", heads),
        "wk": stack("self_attn.k_proj.weight", kv_heads),
        "wv": stack("self_attn.v_proj.weight"),
        "wo": stack("self_attn.o_proj.weight"),
        "rms_ffn": norms("post_attention_layernorm.weight"),
        "w1": stack("mlp.gate_proj.weight"),
        "w2": stack("mlp.down_proj.weight"),
        "w3": stack("mlp.up_proj.weight"),
        "rms_final": t["model.norm.weight"].load(),
    }
    if not cfg.shared_classifier:
        w["wcls"] = t["lm_head.weight"].load()
    return cfg, w


def hf_config(cfg: LlamaConfig) -> dict:
    """config.json of a transformers LlamaForCausalLM with this model's sizes."""
    return {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": cfg.dim,
            "intermediate_size": cfg.hidden_dim, "num_hidden_layers": cfg.n_layers,
            "num_attention_heads": cfg.n_heads, "num_key_value_heads": cfg.n_kv_heads,
            "vocab_size": cfg.vocab_size, "max_position_embeddings": cfg.seq_len, "rms_norm_eps": cfg.norm_eps,
            "rope_theta": cfg.rope_theta, "tie_word_embeddings": cfg.shared_classifier, "hidden_act": "silu",
            "torch_dtype": "float32", "bos_token_id": 1, "eos_token_id": 2,
            "rope_scaling": None if cfg.rope_scaling is None else {
                "rope_type": "llama3", "factor": cfg.rope_scaling.factor,
                "low_freq_factor": cfg.rope_scaling.low_freq_factor,
                "high_freq_factor": cfg.rope_scaling.high_freq_factor,
                "original_max_position_embeddings": cfg.rope_scaling.original_max_position_embeddings}}


def hf_state_dict(cfg: LlamaConfig, w: dict) -> dict:
    """HF parameter names -> tensors (numpy or torch, as given), q/k rows in HF's rotate-half order."""
    t = {"model.embed_tokens.weight": w["token_embedding"], "model.norm.weight": w["rms_final"]}
    for i in range(cfg.n_layers):
        p = f"model.layers.{i}."
        t[p + "input_layernorm.weight"] = w["rms_att"][i]
        t[p + "self_attn.q_proj.weight"] = _pairs_to_halves(w["wq"][i], cfg.n_heads)
        t[p + "self_attn.k_proj.weight"] = _pairs_to_halves(w["wk"][i], cfg.n_kv_heads)
        t[p + "self_attn.v_proj.weight"] = w["wv"][i]
        t[p + "self_attn.o_proj.weight"] = w["wo"][i]
        t[p + "post_attention_layernorm.weight"] = w["rms_ffn"][i]
        t[p + "mlp.gate_proj.weight"] = w["w1"][i]
        t[p + "mlp.down_proj.weight"] = w["w2"][i]
        t[p + "mlp.up_proj.weight"] = w["w3"][i]
    if not cfg.shared_classifier:
        t["lm_head.weight"] = w["wcls"]
    return t


def write_hf(directory, cfg: LlamaConfig, w: dict[str, np.ndarray]) -> Path:
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    (d / "config.json").write_text(json.dumps(hf_config(cfg), indent=1))
    write_safetensors(d / "model.safetensors", hf_state_dict(cfg, w))
    return d
