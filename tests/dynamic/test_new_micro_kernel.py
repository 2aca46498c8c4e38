"""A new DietCode micro-kernel is three files: its .cuh, its template module and one line in
templates/micro_kernels.MICRO_KERNELS.  tests/fixtures/tiny_micro_kernel holds the first two; the line
is added here, and the dynamic tuner (on the synthetic runner) samples, describes, measures, selects
and dispatches the kernel with nothing else told about it."""

import pytest

from autosched.dynamic import sketch
from autosched.dynamic.synthetic import SyntheticRunner
from autosched.dynamic.tune import tune_dynamic
from autosched.dynamic.workload import DynamicWorkload
from autosched.templates import micro_kernels
from autosched.templates.hgemm_dyn import HgemmDynTemplate
from fixtures.tiny_micro_kernel.tiny_gemm import TinyGemmTemplate


@pytest.fixture
def listed(monkeypatch):
    monkeypatch.setattr(micro_kernels, "MICRO_KERNELS", [*micro_kernels.MICRO_KERNELS, TinyGemmTemplate])


def test_a_listed_micro_kernel_is_sampled_described_and_dispatched(listed, h100):
    assert micro_kernels.default_families(False, "nt")[-1] == "tiny_gemm"
    assert "tiny_gemm" not in micro_kernels.default_families(False, "nn")          # its nt_only trait
    dw = DynamicWorkload.parse("hgemm", "Mx1024x1024_bt", (1, 512))
    res = tune_dynamic(dw, [HgemmDynTemplate(), TinyGemmTemplate()], SyntheticRunner(h100), None,
                       rounds=1, per_round=6, max_kernels=2, seed=1, row_probe=False)
    assert any(h["by_family"].get("tiny_gemm", 0) > 0 for h in res.history)      # sampled and measured
    assert {res.dispatcher.family(M) for M in (1, 100, 512)} == {"tiny_gemm"}     # and, modelled fastest, picked
    i = res.dispatcher(100)
    assert sketch.describe_any("tiny_gemm", res.kernels[i].config).startswith("tiny ")
    assert all(v["status"] == "ok" for v in res.verification)


def test_unlisted_it_is_no_micro_kernel(h100):
    assert "tiny_gemm" not in micro_kernels.dynamic_templates()
    with pytest.raises(KeyError):
        sketch.describe_any("tiny_gemm", {"bm": 16, "bn": 16})
