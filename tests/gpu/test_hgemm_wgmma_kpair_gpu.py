"""On an sm_90 GPU: hgemm_wgmma_kpair (two consumers splitting K on one 64-row tile) is correct against
float64 on ragged shapes (tiles clipped at M and N, an odd number of k-blocks so the consumers' shares
differ, a tile per CTA and several), in every row layout and BF16, and on the prefill shape it is
for.  Each config is checked, timed (dozens of launches) and checked again by the worker."""

import random

import pytest

from autosched.build import BuildCache, Builder
from autosched.measure.gpu import GpuRunner
from autosched.measure.protocol import Protocol
from autosched.templates import HgemmWgmmaKPairTemplate
from autosched.templates.hgemm_wgmma_kpair import smem_bytes
from autosched.workloads import Hgemm

pytestmark = pytest.mark.gpu

SHAPES = ["136x264x4104_bt", "128x4096x4096_bt", "72x1032x200_tn_bf16", "296x264x200_tt", "64x72x40"]


def picks(t, w, device) -> list[dict]:
    cfgs = t.space(w, device).enumerate()
    smem = lambda c: smem_bytes(c["bn"], c["swizzle"], c["stages"])  # noqa: E731
    out = [t.default_config(w, device), max(cfgs, key=smem), min(cfgs, key=lambda c: (smem(c), -c["group"]))]
    out += random.Random(w.N).sample(cfgs, 2)
    return [c for i, c in enumerate(out) if c not in out[:i]]


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    t = HgemmWgmmaKPairTemplate()
    with GpuRunner(protocol=Protocol(flush_bytes=1 << 24, warmup=2, repeat=10), timeout_s=60) as runner, \
            Builder(cache=BuildCache(tmp_path_factory.mktemp("kpair"))) as builder:
        dev = runner.device_info
        if t.device_refuses(dev):
            pytest.skip(t.device_refuses(dev))
        items, what = [], {}
        for shape in SHAPES:
            w = Hgemm.from_shape(shape)
            for c in picks(t, w, dev):
                spec = t.render(w, c, dev)
                what[len(items)] = (shape, c, spec.name_expression)
                items.append((len(items), spec, builder.submit(spec)))
        results = dict(runner.measure_stream(items))
    return [(info, results.get(i)) for i, info in what.items()]


@pytest.mark.parametrize("shape", SHAPES)
def test_kpair_is_correct(measured, shape):
    rows = [(info, m) for info, m in measured if info[0] == shape]
    assert rows
    lost = [info for info, m in rows if m is None]
    assert not lost, f"{len(lost)} configs never came back, e.g. {lost[:2]}"
    bad = [(*info, m.status.value, f"max_abs_err={m.max_abs_err}", (m.error or "")[:300]) for info, m in rows
           if not m.ok]
    assert not bad, f"{len(bad)} of {len(rows)} failed:\n" + "\n".join(map(str, bad[:6]))
