"""On a GPU: SGEMM configs at the corners of the space are correct on shapes that fit no tile
(predicated edges), with A plain and transposed, with one and two stages and with split-K."""

import random

import pytest

from autosched.build import BuildCache, Builder
from autosched.measure.gpu import GpuRunner
from autosched.measure.protocol import Protocol
from autosched.templates import SgemmTemplate
from autosched.workloads import Sgemm

pytestmark = pytest.mark.gpu


def corners(configs):
    keys = [lambda c: c["bm"] * c["bn"], lambda c: -c["bm"] * c["bn"], lambda c: c["wm"] * c["wn"],
            lambda c: (c["bk"], c["stages"]), lambda c: (c["splitk"], c["pad"]), lambda c: c["tm"] * c["tn"],
            lambda c: (-c["stages"], c["wniter"])]
    out = []
    for k in keys:
        c = max(configs, key=k)
        if c not in out:
            out.append(c)
    return out + random.Random(0).sample(configs, 6)


@pytest.mark.parametrize("shape, trans_a", [("100x70x33", 0), ("257x130x1000", 1), ("1x4096x512", 0)])
def test_corner_configs_are_correct_on_ragged_shapes(tmp_path, shape, trans_a):
    t = SgemmTemplate()
    w = Sgemm.from_shape(shape, trans_a=trans_a)
    with GpuRunner(protocol=Protocol(flush_bytes=1 << 24, warmup=1, repeat=3), timeout_s=30) as runner, \
            Builder(cache=BuildCache(tmp_path)) as builder:
        cfgs = corners(t.space(w, runner.device_info).enumerate()) + [t.default_config(w, runner.device_info)]
        specs = [t.render(w, c, runner.device_info) for c in cfgs]
        results = dict(runner.measure_stream((i, s, builder.submit(s)) for i, s in enumerate(specs)))
    bad = [(cfgs[i], m.status.value, m.error[:200]) for i, m in results.items() if not m.ok]
    assert len(results) == len(cfgs) and not bad, bad[:3]
