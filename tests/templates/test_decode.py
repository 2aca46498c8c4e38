"""The decode step's non-matmul kernels compile (NVRTC, CPU-only) at the block sizes we use."""

import pytest

from autosched.build import BuildCache, Builder
from autosched.templates.decode import attention_spec, elementwise_spec, rmsnorm_spec, rope_spec


def test_every_decode_kernel_compiles(tmp_path, h100):
    specs = [rmsnorm_spec(288, h100.arch, 32), rmsnorm_spec(4096, h100.arch, 1024), rope_spec(4096, h100.arch),
             elementwise_spec("silu_mul", 11008, h100.arch), elementwise_spec("residual_add", 4096, h100.arch),
             attention_spec(32, 4096, h100.arch, 128), attention_spec(6, 256, h100.arch, 32)]
    with Builder(workers=2, cache=BuildCache(tmp_path)) as b:
        for spec, binary in zip(specs, b.build_many(specs)):
            assert binary.ok, (spec.name_expression, binary.error)
            assert binary.resources.spills == 0 and binary.cubin[:4] == b"\x7fELF"
    assert attention_spec(32, 4096, h100.arch).smem_bytes == 4 * 4096
    with pytest.raises(ValueError, match="unknown elementwise"):
        elementwise_spec("gelu", 8, h100.arch)
