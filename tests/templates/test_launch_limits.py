"""Every KernelSpec is checked against CUDA's launch limits when it is built, and the GEMM spaces
leave out the block heights that would put more than 65535 blocks on grid.y (issue 14)."""

import pytest

from autosched.device import MAX_GRID
from autosched.templates import HgemmMmaTemplate, HgemmWmmaTemplate, SgemmTemplate
from autosched.templates.base import KernelSpec, LaunchError, launch_problem
from autosched.workloads import Hgemm, Sgemm
from autosched.workloads.sgemm import MAX_M


def spec(grid, block, smem=0) -> KernelSpec:
    return KernelSpec(family="t", workload_key="t:N=1", config=(("a", 1),), source="", name_expression="k",
                      grid=grid, block=block, smem_bytes=smem, args=(), arch="sm_90")


@pytest.mark.parametrize("grid, block, smem, words", [
    ((2**31, 1, 1), (32, 1, 1), 0, "grid.x = 2147483648"),
    ((25_000_000_000, 1, 1), (32, 1, 1), 0, "grid.x"),
    ((1, 65536, 1), (32, 1, 1), 0, "grid.y = 65536"),
    ((1, 1, 65536), (32, 1, 1), 0, "grid.z"),
    ((0, 1, 1), (32, 1, 1), 0, "grid.x = 0"),
    ((1, 1, 1), (1025, 1, 1), 0, "block.x = 1025"),
    ((1, 1, 1), (1, 1, 65), 0, "block.z = 65"),
    ((1, 1, 1), (64, 32, 1), 0, "2048 threads"),
    ((1, 1), (32, 1, 1), 0, "grid must be a tuple of 3 ints"),
    ((1, 1, 1), (32.0, 1, 1), 0, "block must be a tuple of 3 ints"),
    ((1, 1, 1), (32, 1, 1), -1, "shared memory"),
])
def test_a_spec_outside_the_launch_limits_is_refused(grid, block, smem, words):
    with pytest.raises(LaunchError, match=words.replace("(", r"\(")) as e:
        spec(grid, block, smem)
    assert isinstance(e.value, ValueError)


@pytest.mark.parametrize("grid, cluster, words", [
    ((131, 1, 1), (2, 1, 1), "grid.x = 131 is no multiple of the cluster's 2"),
    ((16, 1, 1), (16, 1, 1), "over 8 blocks"),
    ((4, 1, 1), (2, 1), "cluster must be None or a tuple of 3 ints"),
    ((4, 1, 1), (0, 1, 1), "cluster must be None or a tuple of 3 ints"),
])
def test_a_cluster_the_grid_cannot_hold_is_refused(grid, cluster, words):
    with pytest.raises(LaunchError, match=words.replace("(", r"\(")):
        KernelSpec(family="t", workload_key="t:N=1", config=(), source="", name_expression="k", grid=grid,
                   block=(128, 1, 1), smem_bytes=0, args=(), arch="sm_90a", cluster=cluster)
    assert launch_problem((132, 1, 1), (128, 1, 1), 0, (2, 1, 1)) is None
    assert launch_problem((131, 1, 1), (128, 1, 1), 0) is None          # no cluster: as before


def test_a_spec_at_the_limits_is_built():
    assert launch_problem((2**31 - 1, 65535, 65535), (1024, 1, 1), 0) is None
    assert spec((2**31 - 1, 65535, 65535), (16, 1, 64)).threads == 1024


@pytest.mark.parametrize("template, workload", [
    (SgemmTemplate(), Sgemm(MAX_M, 1, 1)),
    (SgemmTemplate(), Sgemm(65535 * 64 + 1, 2, 3)),
    (HgemmMmaTemplate(), Hgemm(MAX_M, 1, 8, b_col=1)),
    (HgemmMmaTemplate(), Hgemm(65535 * 32 + 1, 8, 8)),
    (HgemmWmmaTemplate(), Hgemm(MAX_M, 1, 8, b_col=1)),
    (HgemmWmmaTemplate(), Hgemm(65535 * 32 + 1, 8, 8)),
], ids=["sgemm-max", "sgemm-past-bm64", "hgemm-max", "hgemm-past-bm32", "wmma-max", "wmma-past-bm32"])
def test_gemm_spaces_keep_grid_y_within_the_limit(h100, template, workload):
    configs = template.space(workload, h100).enumerate()
    assert configs, "the largest M must leave some config"
    assert all(-(-workload.M // c["bm"]) <= MAX_GRID[1] for c in configs)
    s = template.render(workload, template.default_config(workload, h100), h100)
    assert s.grid[1] <= MAX_GRID[1]
