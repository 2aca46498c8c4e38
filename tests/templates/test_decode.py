"""The decode step's kernels compile (NVRTC, CPU-only) for every activation and weight type the
engine uses, at the seed's and Llama-2-7B's sizes, without spills."""

import pytest

from autosched.build import BuildCache, Builder
from autosched.templates import decode as dk
from autosched.templates.epilogue import EPILOGUES


def test_every_decode_kernel_compiles(tmp_path, h100):
    arch = h100.arch
    specs = []
    for act in ("float", "half"):
        specs += [dk.embed_norm_spec(act, arch),
                  dk.rope_attention_spec(6, 48, 1, act, arch), dk.rope_attention_spec(32, 128, 9, act, arch),
                  dk.rope_attention_spec(32, 64, 8, act, arch), dk.rope_attention_spec(8, 256, 8, act, arch),
                  dk.argmax_spec(act, arch, 32000)]
        for w in ("fp32", "fp16", "int8"):
            specs += [dk.gemv_dense_spec(4096, 11008, w, act, act, arch, epilogue=e) for e in EPILOGUES]
    with Builder(workers=2, cache=BuildCache(tmp_path)) as b:
        for spec, binary in zip(specs, b.build_many(specs)):
            assert binary.ok, (spec.name_expression, binary.error)
            assert binary.resources.spills == 0 and binary.cubin[:4] == b"\x7fELF"


def test_launch_shapes_and_refusals(h100):
    arch = h100.arch
    a = dk.rope_attention_spec(32, 128, 4, "half", arch)
    # shared memory: each warp's max and sum for the merge, whatever the context
    assert a.grid == (32, 4, 1) and a.block == (256, 1, 1) and a.smem_bytes == 4 * 2 * 8
    # a lane holds ceil(head_size / 64) dimension pairs; a warp up to 8 positions in flight
    assert a.name_expression == "rope_attention<__half, 256, 8, 2>"
    assert dk.rope_attention_spec(6, 48, 1, "float", arch).name_expression == "rope_attention<float, 256, 8, 1>"
    assert [dk.attention_pairs(hs) for hs in (32, 48, 64, 96, 128, 256)] == [1, 1, 1, 2, 2, 4]
    assert [dk.attention_batch(act, hs) for act in ("half", "float") for hs in (64, 128, 256)] == [8, 8, 4, 8, 4, 2]
    assert dk.rope_attention_spec(4, 32, 5, "float", arch, threads=64).smem_bytes == 4 * 2 * 2
    assert dk.embed_norm_spec("half", arch).grid == (1, 1, 1)
    assert dk.argmax_spec("half", arch, 32000).grid == (16, 1, 1) and dk.argmax_spec("float", arch, 512).grid == (1, 1, 1)
    assert dk.gemv_dense_spec(32000, 4096, "int8", "half", "half", arch).grid == (8000, 1, 1)
    assert dk.attention_splits(32, 4096, 132) == 8 and dk.attention_splits(6, 256, 132) == 8
    assert dk.attention_splits(8, 16, 132) == 1
    with pytest.raises(ValueError, match="multiple of 16"):
        dk.rope_attention_spec(6, 36, 1, "half", arch)
    with pytest.raises(ValueError, match="head_size <= threads"):
        dk.rope_attention_spec(8, 64, 1, "float", arch, threads=32)
    with pytest.raises(ValueError, match="16-byte aligned"):
        dk.gemv_dense_spec(8, 100, "fp16", "half", "half", arch)
    with pytest.raises(ValueError, match="activation type"):
        dk.embed_norm_spec("bf16", arch)
    with pytest.raises(ValueError, match="unknown epilogue 'gelu'"):
        dk.gemv_dense_spec(8, 64, "fp16", "half", "half", arch, epilogue="gelu")
    with pytest.raises(ValueError, match="pairs rows"):
        dk.gemv_dense_spec(9, 64, "fp16", "half", "half", arch, epilogue="norm_swiglu")
    with pytest.raises(ValueError, match="weight format"):
        dk.gemv_dense_spec(8, 64, "q8", "half", "half", arch)


def test_engine_matmul_kernels_compile_with_programmatic_launch(tmp_path, h100):
    """The q4f16_1 GEMV as the engine serves it (weights prefetched into the L2 before the wait on
    its predecessor, the step's epilogue on its sums) compiles for the configs the shipped H100
    recordings serve, as do the dense ones."""
    from autosched.engine.matmul import Matmul
    mats = [Matmul("gate_up", "q4f16_1", 22016, 4096, "half", "half", h100, pdl=True, epilogue="norm_swiglu"),
            Matmul("o", "q4f16_1", 288, 288, "half", "half", h100, pdl=True, epilogue="residual"),
            Matmul("cls", "int8", 32000, 288, "half", "half", h100, pdl=True, epilogue="norm")]
    assert "-DAUTOSCHED_PDL" in mats[0].spec.options
    assert mats[0].spec.name_expression.startswith("gemv_q4f16_fused<") and mats[0].spec.name_expression.endswith(", 3>")
    assert mats[0].choice.source.startswith("recording") and mats[1].choice.source.startswith("recording")
    with Builder(workers=2, cache=BuildCache(tmp_path)) as b:
        for m, binary in zip(mats, b.build_many([m.spec for m in mats])):
            assert binary.ok, (m.spec.name_expression, binary.error)
            assert binary.resources.spills == 0


def test_attention_blocks_per_sm_matches_the_kernel():
    """The host sizes split-KV for as many blocks an SM as rope_attention's launch bounds promise."""
    from importlib import resources
    import re
    text = resources.files("autosched.kernels").joinpath("decode.cuh").read_text()
    m = re.search(r"constexpr int ATTENTION_BLOCKS_PER_SM = (\d+);", text)
    assert m and int(m.group(1)) == dk.ATTENTION_BLOCKS_PER_SM
    assert "__launch_bounds__(THREADS, ATTENTION_BLOCKS_PER_SM)\nrope_attention(" in text
