"""The micro-kernels' one list: every family tune_dynamic, ops.HgemmDispatch and the DietCode bench
know, and which of them a run samples by default, by GPU, layout and switch."""

import pytest

from autosched.templates.micro_kernels import default_families, dynamic_templates

ALL = ["hgemm_dyn", "hgemm_wgmma", "hgemm_wgmma_splitk", "hgemm_stream", "hgemm_wgmma_swap", "hgemm_wgmma_sched"]


@pytest.fixture
def switches_on(monkeypatch):
    for t in dynamic_templates().values():
        if t.switch is not None:
            monkeypatch.setenv(t.switch.env, "1")


def test_every_family_has_its_dynamic_template():
    table = dynamic_templates()
    assert list(table) == ALL
    assert all(cls().family == f and getattr(cls, "dynamic_m", True) for f, cls in table.items())


def test_the_default_families_follow_the_gpu_the_layout_and_the_switches(switches_on, monkeypatch):
    assert default_families(True, "nt") == ALL
    # no wgmma: its variants go; hgemm_stream (mma.sync) stays
    assert default_families(False, "nt") == ["hgemm_dyn", "hgemm_stream"]
    # not a linear layer's layout: the families that read only nt go
    assert default_families(True, "nn") == ["hgemm_dyn", "hgemm_wgmma", "hgemm_wgmma_splitk", "hgemm_wgmma_sched"]
    monkeypatch.setenv("AUTOSCHED_WGMMA_SWAP", "0")
    monkeypatch.setenv("AUTOSCHED_DYN_SPLIT_K", "0")
    assert default_families(True, "nt") == ["hgemm_dyn", "hgemm_wgmma", "hgemm_stream", "hgemm_wgmma_sched"]


def test_the_bench_runs_the_default_families_the_gpu_takes(switches_on, h100):
    import dataclasses

    from autosched.benchmarks.dynamic import micro_kernel_templates
    assert [t.family for t in micro_kernel_templates(h100)] == ALL
    a100 = dataclasses.replace(h100, name="A100", cc=(8, 0))
    assert [t.family for t in micro_kernel_templates(a100)] == ["hgemm_dyn", "hgemm_stream"]


HOOKS = ("sample", "mutate", "describe", "short", "unroll", "threads", "tile", "grid", "c_grid", "resources",
         "modelled", "probe_features")


def test_every_listed_micro_kernel_answers_every_hook_itself():
    from autosched.templates.base import MicroKernelTemplate
    for family, cls in dynamic_templates().items():
        missing = [h for h in HOOKS if getattr(cls, h) is getattr(MicroKernelTemplate, h)]
        assert not missing, (family, missing)
