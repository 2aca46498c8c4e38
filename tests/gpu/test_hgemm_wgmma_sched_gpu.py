"""On an sm_90 GPU: hgemm_wgmma_sched (two consumer warpgroups, cooperative or ping-pong, staging
their output whole or a box at a time) is correct against float64 in every row layout, FP16 and
BF16, on ragged shapes (tiles clipped at M and N, boxes wholly outside C, a K of one partial slot),
on shapes with one tile a CTA (a ping-pong consumer idle), and many (turns over and over, the box
ring wrapping across tiles), at its corner configs: every tile of each schedule, each staging, the
smallest swizzle with the shortest ring and the largest with the deepest.  The worker checks each
config, times it and checks it again (a persistent CTA that left a stale staging box or barrier
phase behind shows as a wrong second check)."""

import random

import pytest

from autosched.templates import HgemmWgmmaSchedTemplate
from gemm_checks import assert_shape_ok, measure_picks

pytestmark = pytest.mark.gpu

SHAPES = ["2048x2048x1024", "136x264x4104_bt", "300x264x200", "296x264x200_tn_bf16", "200x392x72_tt",
          "1064x2120x136_bt_bf16"]


def picks(t, w, device):
    """Per schedule and tile: the box ring on the smallest swizzle and shortest ring, the deepest ring
    on the largest swizzle with a whole-share staging where the space has one (ping-pong), else with
    the box ring; and two at random."""
    cfgs = list(t.space(w, device))
    out = []
    for key in sorted({(c["schedule"], c["bm"], c["bn"]) for c in cfgs}):
        mine = [c for c in cfgs if (c["schedule"], c["bm"], c["bn"]) == key]
        boxes = [c for c in mine if c["epi_boxes"]]
        whole = [c for c in mine if not c["epi_boxes"]] or boxes
        out += [min(boxes, key=lambda c: (c["swizzle"], c["stages"])),
                max(whole, key=lambda c: (c["swizzle"], c["stages"], c["group"]))]
    out += random.Random(w.key).sample(cfgs, min(2, len(cfgs)))
    return [c for i, c in enumerate(out) if c not in out[:i]]


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    return measure_picks(HgemmWgmmaSchedTemplate(), SHAPES, picks, tmp_path_factory.mktemp("sched"))


@pytest.mark.parametrize("shape", SHAPES)
def test_sched_consumers_are_correct(measured, shape):
    rows = assert_shape_ok(measured, shape, 8)
    assert {info[1]["schedule"] for info, _ in rows} == {"cooperative", "pingpong"}
