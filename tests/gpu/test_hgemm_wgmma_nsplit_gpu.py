"""On an sm_90 GPU: hgemm_wgmma_nsplit (two consumer warpgroups splitting the tile by columns) is
correct against float64 in every row layout, FP16 and BF16, on ragged shapes (tiles clipped at M
and N, a K of one partial slot) and on the prefill shape it is for, at its corner configs: every
tile height and width, each swizzle, the shortest and the deepest ring.  The worker checks each
config, times it and checks it again (a persistent CTA that left a stale staging box or barrier
phase behind shows as a wrong second check)."""

import random

import pytest

from autosched.templates import HgemmWgmmaNSplitTemplate
from gemm_checks import assert_shape_ok, measure_picks

pytestmark = pytest.mark.gpu

SHAPES = ["128x4096x4096_bt", "136x264x4104_bt", "300x264x200", "296x264x200_tn_bf16", "200x392x72_tt",
          "264x520x136_bt_bf16"]


def picks(t, w, device):
    """Every (bm, bn) tile at its shortest ring on the smallest swizzle and at its deepest on the
    largest, and two at random."""
    cfgs = list(t.space(w, device))
    out = []
    for tile in sorted({(c["bm"], c["bn"]) for c in cfgs}):
        mine = [c for c in cfgs if (c["bm"], c["bn"]) == tile]
        out += [min(mine, key=lambda c: (c["swizzle"], c["stages"])),
                max(mine, key=lambda c: (c["swizzle"], c["stages"], c["group"]))]
    out += random.Random(w.key).sample(cfgs, min(2, len(cfgs)))
    return [c for i, c in enumerate(out) if c not in out[:i]]


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    return measure_picks(HgemmWgmmaNSplitTemplate(), SHAPES, picks, tmp_path_factory.mktemp("nsplit"))


@pytest.mark.parametrize("shape", SHAPES)
def test_column_split_consumers_are_correct(measured, shape):
    assert_shape_ok(measured, shape, 4)
