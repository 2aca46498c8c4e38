"""On a GPU: the wmma tensor-core GEMM's corner configs are correct against the float64 reference
(output poisoned with NaN first, by the runner) on shapes that fit no tile, in every layout and
both dtypes."""

import random

import pytest

from autosched.build import BuildCache, Builder
from autosched.measure.gpu import GpuRunner
from autosched.measure.protocol import Protocol
from autosched.templates import HgemmWmmaTemplate
from autosched.templates.hgemm_wmma import smem_bytes
from autosched.workloads import Hgemm

pytestmark = pytest.mark.gpu

# ragged in every dimension the layout leaves free: N ragged where B is stored (N, K), K ragged
# where no stored row is K long (tn), M ragged where A is row-major; bb in whole 16 x 16 tiles
SMALL = {"nn": "300x264x200", "nt": "300x262x200_bt", "tn": "296x264x203_tn", "tt": "296x262x200_tt",
         "bb": "304x272x208_bb"}
LARGE = {"nn": "1000x1032x504", "nt": "1000x1030x504_bt", "tn": "1000x1032x500_tn", "tt": "1000x1030x504_tt",
         "bb": "1008x1040x496_bb"}


def corners(w, configs, n_random: int):
    smem = lambda c: smem_bytes(c["bm"], c["bn"], c["bk"], c["stages"], c["pad"], w.a_col, w.b_col,  # noqa: E731
                                w.blocked, c["wm"], c["wn"])
    keys = [lambda c: -c["bm"] * c["bn"], lambda c: c["bm"] * c["bn"], smem, lambda c: c["wm"] * c["wn"],
            lambda c: -c["wm"] * c["wn"], lambda c: (c["stages"] == 1, c["bk"], c["bm"]),
            lambda c: (c["stages"] == 3, -c["bk"]), lambda c: (c["pad"], c["bn"] // c["wn"]),
            lambda c: (c["bm"] // c["wm"], -c["bn"])]
    out = []
    for k in keys:
        c = max(configs, key=k)
        if c not in out:
            out.append(c)
    return out + random.Random(0).sample(configs, n_random)


def _check(tmp_path, shapes, n_corners=None, n_random=4):
    t = HgemmWmmaTemplate()
    with GpuRunner(protocol=Protocol(flush_bytes=1 << 24, warmup=1, repeat=3), timeout_s=60) as runner, \
            Builder(cache=BuildCache(tmp_path)) as builder:
        dev = runner.device_info
        items, bad = [], []
        for shape in shapes:
            w = Hgemm.from_shape(shape)
            cfgs = corners(w, t.space(w, dev).enumerate(), n_random)[:n_corners] + [t.default_config(w, dev)]
            items += [(w, c, t.render(w, c, dev)) for c in cfgs]
        results = dict(runner.measure_stream((i, s, builder.submit(s)) for i, (_, _, s) in enumerate(items)))
    for i, (w, c, s) in enumerate(items):
        m = results.get(i)
        if m is None or not m.ok:
            bad.append((w.shape_str, c, m and m.status.value, m and m.error[:200]))
    assert len(results) == len(items) and not bad, (len(bad), bad[:4])


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
@pytest.mark.parametrize("layout", ["nn", "nt", "tn", "tt", "bb"])
def test_corner_configs_are_correct_on_ragged_shapes(tmp_path, layout, dtype):
    _check(tmp_path, [f"{SMALL[layout]}_{dtype}"])


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_a_larger_ragged_shape_in_every_layout(tmp_path, dtype):
    """Many blocks, several K slices through every ring depth: three corners and the default a layout."""
    _check(tmp_path, [f"{LARGE[lay]}_{dtype}" for lay in LARGE], n_corners=3, n_random=0)


def test_tiny_shapes_smaller_than_one_fragment(tmp_path):
    """M, N, K under 16 (one partial fragment, one partial slice) in the row layouts."""
    _check(tmp_path, ["3x9x24_bt", "8x8x8", "8x16x8_tn_bf16", "8x5x16_tt"], n_corners=4, n_random=1)
