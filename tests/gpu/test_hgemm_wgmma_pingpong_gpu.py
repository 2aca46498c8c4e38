"""On an sm_90 GPU: hgemm_wgmma_pingpong (two consumer warpgroups taking whole tiles in turn) is
correct against float64 in every row layout, FP16 and BF16, on ragged shapes (tiles clipped at M
and N, a K of one partial slot), on shapes with one tile a CTA (consumer 1 idle), an odd number of
tiles a CTA and many (turns over and over), at its corner configs: every tile, each swizzle, the
shortest and the deepest ring.  The worker checks each config, times it and checks it again (a
persistent CTA that left a stale staging box or barrier phase behind shows as a wrong second check)."""

import random

import pytest

from autosched.templates import HgemmWgmmaPingpongTemplate
from autosched.templates.hgemm_wgmma_pingpong import smem_bytes
from autosched.workloads import Hgemm
from gemm_checks import assert_all_ok, measure_each

pytestmark = pytest.mark.gpu

SHAPES = ["2048x2048x1024", "136x264x4104_bt", "300x264x200", "296x264x200_tn_bf16", "200x392x72_tt",
          "1064x2120x136_bt_bf16"]


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
    def cases(dev):
        for shape in SHAPES:
            w = Hgemm.from_shape(shape)
            yield from (((shape, c, smem_bytes(c["bm"], c["bn"], c["swizzle"], c["stages"])), w, c)
                        for c in picks(t, w, dev))
    t = HgemmWgmmaPingpongTemplate()
    return measure_each(t, cases, tmp_path_factory.mktemp("pingpong"))


@pytest.mark.parametrize("shape", SHAPES)
def test_ping_pong_consumers_are_correct(measured, shape):
    rows = [(info, m) for info, m in measured if info[0] == shape]
    assert len(rows) >= 4, f"{shape}: {len(rows)} configs picked"
    assert_all_ok(rows)
