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


def test_launcher_opts_in_to_over_48kb_of_shared_memory(tmp_path, h100):
    from autosched.device import STATIC_SMEM_LIMIT
    from autosched.templates import HgemmMmaTemplate
    from autosched.workloads import Hgemm
    t, w = HgemmMmaTemplate(), Hgemm(512, 512, 512)
    big = t.default_config(w, h100)
    small = dict(big, bm=32, bn=32, wm=16, wn=16, bk=16, stages=2, pad=0)
    assert t.render(w, big, h100).smem_bytes == 56832 > STATIC_SMEM_LIMIT
    assert t.render(w, small, h100).smem_bytes <= STATIC_SMEM_LIMIT
    expr = t.render(w, big, h100).name_expression
    text = export_cuda(w, t, big, h100, tmp_path / "big.cu").read_text()
    opt_in = f"cudaFuncSetAttribute({expr}, cudaFuncAttributeMaxDynamicSharedMemorySize, 56832)"
    assert opt_in in text
    # the opt-in's error is returned, and the launch comes after it
    assert "if (optin != cudaSuccess) return optin;" in text
    assert text.index(opt_in) < text.index(f"{expr}<<<")
    assert "cudaFuncSetAttribute" not in export_cuda(w, t, small, h100, tmp_path / "small.cu").read_text()
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc not installed: checked the text only")
    r = subprocess.run(["nvcc", "-arch=sm_90", "-c", str(tmp_path / "big.cu"), "-o", str(tmp_path / "big.o")],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
