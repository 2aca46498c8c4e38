"""On an sm_90 GPU with nvcc: the standalone .cu of a dynamic result with hgemm_dyn and hgemm_wgmma
micro-kernels builds on its own (nvcc, linked with -lcuda), and its launcher, called through ctypes on
torch's stream, computes Y = X . W^T for Ms that each micro-kernel serves, ragged ones included
(checked against float32 on the same inputs)."""

import ctypes
import shutil
import subprocess

import pytest

from autosched.dynamic.export import c_name, export_cu
from autosched.dynamic.synthetic import SyntheticRunner
from autosched.dynamic.tune import tune_dynamic
from autosched.dynamic.workload import DynamicWorkload
from autosched.templates.hgemm_dyn import HgemmDynTemplate
from autosched.templates.hgemm_wgmma import HgemmWgmmaDynTemplate

pytestmark = pytest.mark.gpu


def test_exported_cu_builds_and_computes(tmp_path):
    torch = pytest.importorskip("torch")
    from autosched.device import query
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc not installed")
    info = query(0)
    if info.cc < (9, 0):
        pytest.skip("hgemm_wgmma needs sm_90")
    dw = DynamicWorkload.parse("hgemm", "Mx4096x4096_bt", (1, 4096))
    # this seed's modelled search keeps hgemm_dyn for M <= 16 and hgemm_wgmma above (both run below)
    res = tune_dynamic(dw, [HgemmDynTemplate(), HgemmWgmmaDynTemplate()], SyntheticRunner(info), None,
                       rounds=2, per_round=10, seed=1)
    fams = {k.family for k in res.kernels}
    assert fams == {"hgemm_dyn", "hgemm_wgmma"}, fams
    cu = export_cu(res, tmp_path / "k.cu", info)
    lib = tmp_path / "k.so"
    r = subprocess.run(["nvcc", "-gencode", "arch=compute_90a,code=sm_90a", "-shared", "-Xcompiler", "-fPIC",
                        "-o", str(lib), str(cu), "-lcuda"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-3000:]
    f = getattr(ctypes.CDLL(str(lib)), c_name(res))
    f.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p]
    f.restype = ctypes.c_int
    g = torch.Generator(device="cuda").manual_seed(0)
    w = (torch.randn((4096, 4096), device="cuda", generator=g) * 0.05).half()
    seen = set()
    for M in (1, 9, 77, 300, 1000, 2048, 4096):
        x = (torch.randn((M, 4096), device="cuda", generator=g) * 0.05).half()
        y = torch.full((M, 4096), float("nan"), device="cuda").half()
        err = f(x.data_ptr(), w.data_ptr(), y.data_ptr(), M, torch.cuda.current_stream().cuda_stream)
        torch.cuda.synchronize()
        assert err == 0, (M, err)
        ref = x.float() @ w.float().T
        torch.testing.assert_close(y.float(), ref, atol=2e-2, rtol=2e-2, msg=lambda m: f"M={M}: {m}")
        seen.add(res.dispatcher.family(M))
    assert seen == {"hgemm_dyn", "hgemm_wgmma"}, seen        # both kinds of micro-kernel ran
