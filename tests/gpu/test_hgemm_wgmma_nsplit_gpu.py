"""On an sm_90 GPU: hgemm_wgmma_nsplit (two consumer warpgroups splitting the tile by columns) is
correct against float64 in every row layout, FP16 and BF16, on ragged shapes (tiles clipped at M
and N, a K of one partial slot) and on the prefill shape it is for, at its corner configs: every
tile height and width, each swizzle, the shortest and the deepest ring.  The worker checks each
config, times it and checks it again (a persistent CTA that left a stale staging box or barrier
phase behind shows as a wrong second check)."""

import random

import pytest

from autosched.build import BuildCache, Builder
from autosched.measure.gpu import GpuRunner
from autosched.measure.protocol import Protocol
from autosched.templates import HgemmWgmmaNSplitTemplate
from autosched.templates.hgemm_wgmma import smem_bytes
from autosched.workloads import Hgemm

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
    t = HgemmWgmmaNSplitTemplate()
    with GpuRunner(protocol=Protocol(flush_bytes=1 << 24, warmup=2, repeat=10), timeout_s=60) as runner, \
            Builder(cache=BuildCache(tmp_path_factory.mktemp("nsplit"))) as builder:
        dev = runner.device_info
        if t.device_refuses(dev):
            pytest.skip(t.device_refuses(dev))
        items, what = [], {}
        for shape in SHAPES:
            w = Hgemm.from_shape(shape)
            for c in picks(t, w, dev):
                spec = t.render(w, c, dev)
                what[len(items)] = (shape, c, spec.name_expression, smem_bytes(c["bm"], c["bn"], c["swizzle"],
                                                                               c["stages"]))
                items.append((len(items), spec, builder.submit(spec)))
        results = dict(runner.measure_stream(items))
    return [(info, results.get(i)) for i, info in what.items()]


@pytest.mark.parametrize("shape", SHAPES)
def test_column_split_consumers_are_correct(measured, shape):
    rows = [(info, m) for info, m in measured if info[0] == shape]
    assert len(rows) >= 4, f"{shape}: {len(rows)} configs picked"
    lost = [info for info, m in rows if m is None]
    assert not lost, f"{len(lost)} configs never came back, e.g. {lost[:2]}"
    bad = [(*info, m.status.value, f"max_abs_err={m.max_abs_err}", (m.error or "")[:300]) for info, m in rows
           if not m.ok]
    assert not bad, f"{len(bad)} of {len(rows)} failed:\n" + "\n".join(map(str, bad[:6]))
