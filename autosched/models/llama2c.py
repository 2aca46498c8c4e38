"""The llama2.c checkpoint and tokenizer formats (Karpathy's run.c, "legacy" version 0).

Checkpoint: 7 int32 (dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size, seq_len; a negative
vocab_size means the classifier is stored separately), then float32 tensors in this order, each
matrix (out, in) row-major like torch's nn.Linear.weight:

    token_embedding (vocab, dim)            rms_att (layers, dim)
    wq (layers, n_heads*hs, dim)            wk, wv (layers, n_kv_heads*hs, dim)
    wo (layers, dim, n_heads*hs)            rms_ffn (layers, dim)
    w1 (layers, hidden, dim)                w2 (layers, dim, hidden)       w3 (layers, hidden, dim)
    rms_final (dim,)                        freq_cis_real, freq_cis_imag (seq_len, hs/2): unused
    wcls (vocab, dim)                       only when not shared

Tokenizer: int32 max_token_length, then per token: float32 score, int32 byte length, bytes.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from autosched.models.rope import RopeScaling

HEADER = struct.Struct("<7i")


@dataclass(frozen=True)
class LlamaConfig:
    dim: int
    hidden_dim: int
    n_layers: int
    n_heads: int
    n_kv_heads: int
    vocab_size: int
    seq_len: int
    shared_classifier: bool = True
    norm_eps: float = 1e-5
    rope_theta: float = 10000.0
    rope_scaling: RopeScaling | None = None      # Llama-3's frequency scaling (models/rope.py)

    def __post_init__(self):
        problems = []
        if min(self.dim, self.hidden_dim, self.n_layers, self.n_heads, self.n_kv_heads, self.vocab_size,
               self.seq_len) < 1:
            problems.append("every size must be >= 1")
            raise ValueError("invalid Llama config: " + "; ".join(problems))     # the checks below divide by them
        if self.dim % self.n_heads:
            problems.append(f"dim {self.dim} is not a multiple of n_heads {self.n_heads}")
        elif self.head_size % 2:
            problems.append(f"head size {self.head_size} is odd: RoPE rotates pairs")
        if self.n_heads % self.n_kv_heads:
            problems.append(f"n_heads {self.n_heads} is not a multiple of n_kv_heads {self.n_kv_heads}")
        if problems:
            raise ValueError("invalid Llama config: " + "; ".join(problems))

    @property
    def head_size(self) -> int:
        return self.dim // self.n_heads

    @property
    def kv_dim(self) -> int:
        return self.n_kv_heads * self.head_size

    def shapes(self) -> dict[str, tuple[int, ...]]:
        L, d, h, hs = self.n_layers, self.dim, self.hidden_dim, self.head_size
        s = {"token_embedding": (self.vocab_size, d), "rms_att": (L, d), "wq": (L, self.n_heads * hs, d),
             "wk": (L, self.kv_dim, d), "wv": (L, self.kv_dim, d), "wo": (L, d, self.n_heads * hs),
             "rms_ffn": (L, d), "w1": (L, h, d), "w2": (L, d, h), "w3": (L, h, d), "rms_final": (d,)}
        if not self.shared_classifier:
            s["wcls"] = (self.vocab_size, d)
        return s

    def n_params(self) -> int:
        return sum(int(np.prod(s)) for s in self.shapes().values())


# the seed's checkpoint sizes, Llama-2-7B's shape, and grouped-query models of public shapes
# (random:NAME: seeded random weights; the context is cut to what a decode bench needs)
SEED_CONFIGS = {
    "stories15M": LlamaConfig(288, 768, 6, 6, 6, 32000, 256),
    "stories42M": LlamaConfig(512, 1376, 8, 8, 8, 32000, 1024),
    "llama2-7b": LlamaConfig(4096, 11008, 32, 32, 32, 32000, 4096, shared_classifier=False),
    # TinyLlama-1.1B: 22 layers, 32 heads, 4 kv heads, untied classifier
    "tinyllama-1.1b": LlamaConfig(2048, 5632, 22, 32, 4, 32000, 2048, shared_classifier=False),
    # Llama-3.2-1B: 16 layers, 32 heads, 8 kv heads, tied embeddings, 128256 tokens, theta 500000
    "llama3.2-1b": LlamaConfig(2048, 8192, 16, 32, 8, 128256, 2048, rope_theta=500000.0,
                               rope_scaling=RopeScaling(32.0, 1.0, 4.0, 8192)),
}


def random_weights(cfg: LlamaConfig, seed: int) -> dict[str, np.ndarray]:
    """Seeded random weights scaled like a trained model's (unit-ish activations), float32."""
    rng = np.random.default_rng(seed)
    w = {}
    for name, shape in cfg.shapes().items():
        if name.startswith("rms"):
            w[name] = (1.0 + 0.1 * rng.standard_normal(shape)).astype(np.float32)
        else:
            fan_in = shape[-1]
            w[name] = (rng.standard_normal(shape) / np.sqrt(fan_in)).astype(np.float32)
    return w


def write_checkpoint(path, cfg: LlamaConfig, weights: dict[str, np.ndarray]) -> Path:
    path = Path(path)
    vocab = cfg.vocab_size if cfg.shared_classifier else -cfg.vocab_size
    with open(path, "wb") as f:
        f.write(HEADER.pack(cfg.dim, cfg.hidden_dim, cfg.n_layers, cfg.n_heads, cfg.n_kv_heads, vocab,
                            cfg.seq_len))
        shapes = cfg.shapes()
        for name in ("token_embedding", "rms_att", "wq", "wk", "wv", "wo", "rms_ffn", "w1", "w2", "w3",
                     "rms_final"):
            _write(f, name, weights[name], shapes[name])
        # the legacy format's RoPE tables: written for compatibility, never read back
        np.zeros((2, cfg.seq_len, cfg.head_size // 2), dtype=np.float32).tofile(f)
        if not cfg.shared_classifier:
            _write(f, "wcls", weights["wcls"], shapes["wcls"])
    return path


def _write(f, name, a, shape):
    if a.shape != shape:
        raise ValueError(f"{name} must be {shape}, got {a.shape}")
    np.ascontiguousarray(a, dtype=np.float32).tofile(f)


def _config_of(path, raw: bytes) -> LlamaConfig:
    if len(raw) < HEADER.size:
        raise ValueError(f"{path}: {len(raw)} bytes is too short for a llama2.c header")
    dim, hidden, layers, heads, kv_heads, vocab, seq = HEADER.unpack_from(raw)
    try:
        return LlamaConfig(dim, hidden, layers, heads, kv_heads, abs(vocab), seq, shared_classifier=vocab > 0)
    except ValueError as e:
        raise ValueError(f"{path}: not a llama2.c checkpoint: its header says {e}") from e


def read_header(path) -> LlamaConfig:
    """The config of a llama2.c checkpoint, from its header alone (no weights read)."""
    path = Path(path)
    with open(path, "rb") as f:
        return _config_of(path, f.read(HEADER.size))


def read_checkpoint(path) -> tuple[LlamaConfig, dict[str, np.ndarray]]:
    path = Path(path)
    # memory-mapped: the weights are views of the file, read as the engine packs each layer
    raw = np.memmap(path, dtype=np.uint8, mode="r") if path.stat().st_size else b""
    cfg = _config_of(path, raw)
    dim, hidden, layers, heads, kv_heads, vocab, seq = HEADER.unpack_from(raw)
    shapes = cfg.shapes()
    tail = 2 * seq * (cfg.head_size // 2)
    want = HEADER.size + 4 * (cfg.n_params() + tail)
    if len(raw) != want:
        raise ValueError(f"{path}: {len(raw)} bytes, but a llama2.c checkpoint of {cfg} has {want}")
    data = np.frombuffer(raw, dtype="<f4", offset=HEADER.size)
    weights, off = {}, 0
    for name in ("token_embedding", "rms_att", "wq", "wk", "wv", "wo", "rms_ffn", "w1", "w2", "w3",
                 "rms_final"):
        n = int(np.prod(shapes[name]))
        weights[name] = data[off:off + n].reshape(shapes[name])
        off += n
    off += tail
    if not cfg.shared_classifier:
        weights["wcls"] = data[off:off + cfg.vocab_size * dim].reshape(shapes["wcls"])
    return cfg, weights


@dataclass
class Tokenizer:
    """llama2.c's BPE: greedy merges of the adjacent pair whose merge has the highest score."""

    vocab: list[bytes]
    scores: list[float]
    max_token_length: int

    def __post_init__(self):
        self._ids = {t: i for i, t in enumerate(self.vocab)}

    @classmethod
    def load(cls, path) -> "Tokenizer":
        raw = Path(path).read_bytes()
        try:
            (max_len,), off = struct.unpack_from("<i", raw), 4
            vocab, scores = [], []
            while off < len(raw):
                score, n = struct.unpack_from("<fi", raw, off)
                off += 8
                if n < 0 or off + n > len(raw):
                    raise ValueError(f"token {len(vocab)} of {n} bytes at byte {off} runs past the end")
                vocab.append(raw[off:off + n])
                scores.append(score)
                off += n
        except struct.error as e:       # cut short inside a token's header
            raise ValueError(f"{path}: not a llama2.c tokenizer: cut short ({e})") from e
        except ValueError as e:
            raise ValueError(f"{path}: not a llama2.c tokenizer: {e}") from e
        return cls(vocab, scores, max_len)

    def save(self, path) -> Path:
        with open(path, "wb") as f:
            f.write(struct.pack("<i", self.max_token_length))
            for tok, score in zip(self.vocab, self.scores):
                f.write(struct.pack("<fi", score, len(tok)) + tok)
        return Path(path)

    def encode(self, text: str, bos: bool = True) -> list[int]:
        """llama2.c's encode: a leading space, one token per UTF-8 character (byte fallback
        tokens <0xNN> at ids 3 + byte), then merges by score."""
        ids = [1] if bos else []
        pieces = []
        for ch in (" " + text) if text else "":
            b = ch.encode()
            if b in self._ids:
                pieces.append(self._ids[b])
            else:
                pieces += [3 + x for x in b]
        while True:
            best, at = None, -1
            for i in range(len(pieces) - 1):
                merged = self.vocab[pieces[i]] + self.vocab[pieces[i + 1]]
                j = self._ids.get(merged)
                if j is not None and (best is None or self.scores[j] > self.scores[best]):
                    best, at = j, i
            if best is None:
                break
            pieces[at:at + 2] = [best]
        return ids + pieces

    def decode(self, prev: int, token: int) -> bytes:
        piece = self.vocab[token]
        if prev == 1 and piece.startswith(b" "):
            piece = piece[1:]          # the leading space after BOS is the encoder's, not the text's
        if piece.startswith(b"<0x") and piece.endswith(b">") and len(piece) == 6:
            return bytes([int(piece[3:5], 16)])
        return piece
