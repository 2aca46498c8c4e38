"""Text in and out of a model for `autosched generate`: a llama2.c tokenizer.bin, or a Hugging Face
tokenizer (tokenizer.json, through `transformers` where it is installed), behind one interface:

    text = find_text(model_path, explicit_tokenizer)   # None when there is none to find
    ids = text.encode("Once upon a time")              # with BOS
    out = text.start(ids)                              # the prompt as bytes
    out = text.push(token)                             # the bytes a new token adds
"""

from __future__ import annotations

from pathlib import Path

from autosched.models.llama2c import Tokenizer

# transformers is imported inside functions: optional / slow to import, a CPU install runs without it

BOS = 1


class Llama2cText:
    def __init__(self, tok: Tokenizer):
        self.tok = tok
        self.prev = BOS

    @property
    def vocab_size(self) -> int:
        return len(self.tok.vocab)

    def encode(self, text: str) -> list[int]:
        return self.tok.encode(text)

    def start(self, prompt: list[int]) -> bytes:
        self.prev = prompt[-1] if prompt else BOS
        return b"".join(self.tok.decode(a, b) for a, b in zip([BOS] + prompt, prompt) if b != BOS)

    def push(self, token: int) -> bytes:
        piece = self.tok.decode(self.prev, token)
        self.prev = token
        return piece


class HFText:
    """Streams by decoding the whole sequence and emitting what is new (a token may complete a
    character the previous one began: an unfinished one, U+FFFD, is held back)."""

    def __init__(self, tok):
        self.tok = tok
        self.ids: list[int] = []
        self.text = ""

    @property
    def vocab_size(self) -> int:
        return len(self.tok)

    def encode(self, text: str) -> list[int]:
        ids = list(self.tok(text).input_ids)
        bos = self.tok.bos_token_id
        return ids if bos is None or (ids and ids[0] == bos) else [bos] + ids

    def _decode(self) -> str:
        return self.tok.decode(self.ids, skip_special_tokens=True)

    def start(self, prompt: list[int]) -> bytes:
        self.ids = list(prompt)
        self.text = self._decode()
        return self.text.encode()

    def push(self, token: int) -> bytes:
        self.ids.append(token)
        text = self._decode()
        if text.endswith("\ufffd") or not text.startswith(self.text):
            return b""
        new, self.text = text[len(self.text):], text
        return new.encode()


def _hf(directory: Path):
    try:
        from transformers import AutoTokenizer
    except ImportError as e:
        raise ValueError(f"{directory} has a Hugging Face tokenizer (tokenizer.json); reading it needs "
                         "`pip install transformers`, or pass the prompt as ids with --prompt-tokens") from e
    return HFText(AutoTokenizer.from_pretrained(str(directory)))


def find_text(model: Path | None, explicit: str | None = None):
    """The tokenizer for a model: `explicit` (a tokenizer.bin, a tokenizer.json or a directory
    holding one), else a tokenizer.bin beside a .bin model or inside a model directory, else a
    model directory's tokenizer.json.  None when there is none."""
    if explicit:
        p = Path(explicit)
        if not p.exists():
            raise ValueError(f"tokenizer {p} does not exist")
        candidates = [p]
    elif model is None:
        return None
    elif model.is_dir():
        candidates = [model / "tokenizer.bin", model]
    else:
        candidates = [model.with_name("tokenizer.bin")]
    for p in candidates:
        if p.is_file() and p.name != "tokenizer.json":
            return Llama2cText(Tokenizer.load(p))
        if p.is_file():
            return _hf(p.parent)
        if p.is_dir() and (p / "tokenizer.json").exists():
            return _hf(p)
    if explicit:
        raise ValueError(f"{explicit} is neither a llama2.c tokenizer.bin nor a Hugging Face tokenizer")
    return None
