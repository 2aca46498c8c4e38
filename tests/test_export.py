"""`export` writes a .cu that nvcc compiles on its own, with the config's instantiation and launch."""

import shutil
import subprocess

import pytest

from autosched.cuda_export import export_cuda
from autosched.templates import GemvQ4F16Template, SgemmTemplate
from autosched.workloads import GemvQ4F16, Sgemm


@pytest.mark.parametrize("template, workload, extra", [
    (GemvQ4F16Template(), GemvQ4F16(4096, 4096), {}),
    (SgemmTemplate(), Sgemm(100, 70, 33), {"splitk": 2}),
])
def test_exported_kernel_is_standalone(tmp_path, h100, template, workload, extra):
    cfg = dict(template.default_config(workload, h100), **extra)
    out = export_cuda(workload, template, cfg, h100, tmp_path / "k.cu", source="test")
    text = out.read_text()
    spec = template.render(workload, cfg, h100)
    assert f"template __global__ void {spec.name_expression}(" in text
    assert f"<<<dim3{spec.grid}, dim3{spec.block}, {spec.smem_bytes}, stream>>>" in text
    assert 'extern "C" cudaError_t autosched_' in text
    assert ("cudaMemsetAsync(C, 0," in text) == (spec.output_init == "zero")
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc not installed: checked the text only")
    r = subprocess.run(["nvcc", f"-arch={h100.arch}", "-c", str(out), "-o", str(tmp_path / "k.o")],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
