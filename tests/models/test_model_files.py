"""Model files a user hands to tune-model and convert: a Hugging Face directory is checked against
its safetensors headers and its config.json before anything runs, and convert writes the format its
destination names, whole or not at all (SIGTERM included)."""

import json
import os
import signal
import struct
import subprocess
import sys
import time

import pytest

from autosched import api
from autosched.cli import main
from autosched.models.hf import write_hf
from autosched.models.llama2c import LlamaConfig, random_weights, read_header, write_checkpoint

CFG = LlamaConfig(dim=32, hidden_dim=64, n_layers=2, n_heads=4, n_kv_heads=2, vocab_size=50, seq_len=16)


@pytest.fixture
def hf(tmp_path):
    return write_hf(tmp_path / "hf", CFG, random_weights(CFG, 1))


def edit_header(path, edit) -> None:
    """Rewrite a safetensors file's JSON header through `edit(header)`, its data left as it was."""
    raw = path.read_bytes()
    (n,) = struct.unpack_from("<Q", raw)
    header = json.loads(raw[8:8 + n])
    edit(header)
    head = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(head)) + head + raw[8 + n:])


def refused(model, *words) -> None:
    with pytest.raises(api.AutoschedError) as e:
        api.model_config(str(model))
    msg = str(e.value)
    assert "\n" not in msg and all(w in msg for w in words), msg


def test_a_header_that_claims_a_petabyte_is_refused_without_reading_it(hf, capsys):
    f = hf / "model.safetensors"
    raw = f.read_bytes()
    f.write_bytes(struct.pack("<Q", 10**15) + raw[8:])
    refused(hf, "model.safetensors", "header claims 1,000,000,000,000,000 bytes")
    assert main(["tune-model", str(hf), "--runner", "replay", "--db", str(hf.parent / "db")]) == 2
    err = capsys.readouterr().err
    assert "header claims" in err and "Traceback" not in err and "MemoryError" not in err


def test_a_tensor_whose_bytes_are_not_its_dtype_times_shape_is_refused(hf):
    def grow(header):
        header["model.norm.weight"]["shape"] = [64]          # 64 floats in the span of 32
    edit_header(hf / "model.safetensors", grow)
    refused(hf, "tensor model.norm.weight", "needs 256")


def test_a_tensor_past_the_end_of_its_file_is_refused(hf):
    f = hf / "model.safetensors"
    f.write_bytes(f.read_bytes()[:-4])
    refused(hf, "truncated", "model.safetensors")


def test_a_tensor_of_another_shape_than_config_json_makes_it_is_refused(hf):
    conf = json.loads((hf / "config.json").read_text())
    conf["intermediate_size"] = 48
    (hf / "config.json").write_text(json.dumps(conf))
    refused(hf, "mlp.gate_proj.weight", "has shape (64, 32)", "config.json makes it (48, 32)")


def test_a_missing_tensor_is_refused_before_tuning(hf):
    edit_header(hf / "model.safetensors", lambda h: h.pop("model.layers.1.mlp.up_proj.weight"))
    refused(hf, "model.layers.1.mlp.up_proj.weight is missing")


def test_convert_bin_to_bin_writes_a_llama2c_file(tmp_path, capsys):
    src = write_checkpoint(tmp_path / "x.bin", CFG, random_weights(CFG, 1))
    assert main(["convert", str(src), str(tmp_path / "out.bin")]) == 0
    assert (tmp_path / "out.bin").is_file() and read_header(tmp_path / "out.bin") == CFG
    assert "llama2.c checkpoint" in capsys.readouterr().out
    assert main(["convert", str(src), str(tmp_path / "out")]) == 0
    assert (tmp_path / "out" / "config.json").is_file()


# runs `autosched convert` with a write that stops half way, so the parent can send SIGTERM there
_SLOW = """
import sys, time
import autosched.models.hf as hf
def half(path, tensors):
    with open(path, "wb") as f:
        f.write(b"\\0" * 64)
    open(sys.argv[3], "w").close()
    time.sleep(60)
hf.write_safetensors = half
from autosched.cli import main
sys.exit(main(["convert", sys.argv[1], sys.argv[2]]))
"""


def test_sigterm_during_convert_leaves_nothing_tune_model_accepts(tmp_path):
    src = write_checkpoint(tmp_path / "x.bin", CFG, random_weights(CFG, 1))
    dst, ready = tmp_path / "out", tmp_path / "ready"
    p = subprocess.Popen([sys.executable, "-c", _SLOW, str(src), str(dst), str(ready)])
    try:
        deadline = time.monotonic() + 60
        while not ready.exists() and p.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        assert ready.exists()
        p.send_signal(signal.SIGTERM)
        assert p.wait(timeout=30) == 128 + signal.SIGTERM
    finally:
        p.kill()
    assert not dst.exists()
    assert sorted(os.listdir(tmp_path)) == ["ready", "x.bin"]        # no half-written temporary either
    refused(dst, "does not exist")
