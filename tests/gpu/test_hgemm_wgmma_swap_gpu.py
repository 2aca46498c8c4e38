"""On an sm_90 GPU: hgemm_wgmma_swap (the weight's rows on wgmma's M side, the tokens on its N side,
the output written transposed through 128B-swizzled staging) is correct against float64 on ragged nt
shapes, FP16 and BF16: token tiles clipped at M (M below one tile, M one past a tile), weight tiles
clipped at N, a K of one partial slot, one tile a CTA and many (the persistent loop reusing its
staging), at every wgmma N of the file and both tile heights, at the smallest or the largest
swizzle in turn, K split in every way the shape's space allows, the slices meeting in the workspace
or in one cluster's shared memory (hgemm_wgmma_swap_cluster).  The worker checks each config, times it and checks it again."""

import random

import pytest

from autosched.templates import HgemmWgmmaSwapTemplate
from gemm_checks import assert_shape_ok, measure_picks

pytestmark = pytest.mark.gpu

SHAPES = ["112x768x768_bt", "5x264x200_bt", "129x392x4104_bt", "300x2120x136_bt_bf16", "1064x200x72_bt",
          "33x4096x4096_bt_bf16"]


def picks(t, w, device):
    """Per (BW, BT), in turn, the smallest swizzle on the shortest ring or the largest on the deepest; a
    64B swizzle whose ring ends off the staging's 1024-byte boundary; then two at random."""
    cfgs = list(t.space(w, device))
    out = []
    for i, key in enumerate(sorted({(c["bw"], c["bt"]) for c in cfgs})):
        mine = [c for c in cfgs if (c["bw"], c["bt"]) == key]
        out.append((max if i % 2 else min)(mine, key=lambda c: (c["swizzle"], c["stages"])))
    odd = [c for c in cfgs if c["swizzle"] == 64 and (c["bw"] + c["bt"]) % 16 and c["stages"] % 2]
    out += odd[:1]
    rng = random.Random(w.key)
    # every K split the shape's space holds, the slices meeting in the workspace or in a cluster, on a
    # random tile
    for sk, r in sorted({(c["split_k"], c["reduce"]) for c in cfgs if c["split_k"] > 1}):
        out.append(rng.choice([c for c in cfgs if (c["split_k"], c["reduce"]) == (sk, r)]))
    out += rng.sample(cfgs, min(2, len(cfgs)))
    return [c for i, c in enumerate(out) if c not in out[:i]]


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    return measure_picks(HgemmWgmmaSwapTemplate(), SHAPES, picks, tmp_path_factory.mktemp("swap"))


@pytest.mark.parametrize("shape", SHAPES)
def test_swapped_roles_are_correct(measured, shape):
    assert_shape_ok(measured, shape, 4)
