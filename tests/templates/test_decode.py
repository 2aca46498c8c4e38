"""The decode step's kernels compile (NVRTC, CPU-only) for every activation and weight type the
engine uses, at the seed's and Llama-2-7B's sizes, without spills."""

import pytest

from autosched.build import BuildCache, Builder
from autosched.templates import decode as dk


def test_every_decode_kernel_compiles(tmp_path, h100):
    arch = h100.arch
    specs = []
    for act in ("float", "half"):
        specs += [dk.embed_spec(288, arch), dk.add_rmsnorm_spec(288, act, arch), dk.add_rmsnorm_spec(4096, act, arch),
                  dk.rope_attention_spec(6, 48, 256, 1, act, arch), dk.rope_attention_spec(32, 128, 4096, 8, act, arch),
                  dk.attention_combine_spec(32, 128, act, arch), dk.silu_mul_spec(11008, act, arch),
                  dk.argmax_spec(act, arch)]
        for w in ("fp32", "fp16", "int8"):
            specs.append(dk.gemv_dense_spec(4096, 11008, w, act, act, arch))
    with Builder(workers=2, cache=BuildCache(tmp_path)) as b:
        for spec, binary in zip(specs, b.build_many(specs)):
            assert binary.ok, (spec.name_expression, binary.error)
            assert binary.resources.spills == 0 and binary.cubin[:4] == b"\x7fELF"


def test_launch_shapes_and_refusals(h100):
    arch = h100.arch
    a = dk.rope_attention_spec(32, 128, 4096, 4, "half", arch)
    assert a.grid == (32, 4, 1) and a.block == (128, 1, 1) and a.smem_bytes == 4 * (3 * 128 + 1024)
    assert dk.rmsnorm_threads(288) == 128 and dk.rmsnorm_threads(4096) == 1024
    assert dk.gemv_dense_spec(32000, 4096, "int8", "half", "half", arch).grid == (8000, 1, 1)
    assert dk.attention_splits(32, 256, 132) == 1 and dk.attention_splits(32, 4096, 132) == 8
    with pytest.raises(ValueError, match="16-byte aligned"):
        dk.gemv_dense_spec(8, 100, "fp16", "half", "half", arch)
    with pytest.raises(ValueError, match="activation type"):
        dk.silu_mul_spec(8, "bf16", arch)
    with pytest.raises(ValueError, match="weight format"):
        dk.gemv_dense_spec(8, 64, "q8", "half", "half", arch)
