"""Tokenizers for `autosched generate`: found beside the model or in its directory, and streamed
token by token into exactly the text a whole decode gives."""

import json

import pytest

from autosched.models.text import HFText, Llama2cText, find_text
from .test_llama2c import small_tokenizer


def test_llama2c_tokenizer_found_and_streamed(tmp_path):
    tok = small_tokenizer()
    tok.save(tmp_path / "tokenizer.bin")
    (tmp_path / "m.bin").write_bytes(b"")
    text = find_text(tmp_path / "m.bin")
    assert isinstance(text, Llama2cText) and text.vocab_size == len(tok.vocab)
    ids = text.encode("ab abé!")
    out = text.start(ids[:2]) + b"".join(text.push(t) for t in ids[2:])
    assert out.decode() == "ab abé!"
    (tmp_path / "d").mkdir()
    tok.save(tmp_path / "d" / "tokenizer.bin")
    assert isinstance(find_text(tmp_path / "d"), Llama2cText)
    (tmp_path / "e").mkdir()
    assert find_text(tmp_path / "e" / "m.bin") is None and find_text(tmp_path / "e") is None
    assert find_text(None) is None
    with pytest.raises(ValueError, match="does not exist"):
        find_text(tmp_path / "m.bin", str(tmp_path / "missing.bin"))


def test_hugging_face_tokenizer_found_and_streamed(tmp_path):
    pytest.importorskip("transformers")
    tokenizers = pytest.importorskip("tokenizers")
    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2, "once": 3, "upon": 4, "a": 5, "time": 6, "é": 7}
    t = tokenizers.Tokenizer(tokenizers.models.WordLevel(vocab, unk_token="<unk>"))
    t.pre_tokenizer = tokenizers.pre_tokenizers.Whitespace()
    t.decoder = tokenizers.decoders.WordPiece(prefix="##")      # joins words with spaces
    t.save(str(tmp_path / "tokenizer.json"))
    (tmp_path / "tokenizer_config.json").write_text(json.dumps(
        {"tokenizer_class": "PreTrainedTokenizerFast", "bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>"}))
    text = find_text(tmp_path)
    assert isinstance(text, HFText)
    ids = text.encode("once upon a time")
    assert ids == [1, 3, 4, 5, 6]
    out = text.start(ids[:2]) + b"".join(text.push(i) for i in ids[2:] + [7])
    assert out.decode() == "once upon a time é"
