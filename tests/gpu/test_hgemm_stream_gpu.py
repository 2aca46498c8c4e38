"""On a GPU: hgemm_stream is correct against float64 on ragged shapes (N and M clipped, K a multiple of
8 but not of a ring slot, slices of unequal length) in FP16 and BF16, with and without split-K, and on
the prefill and decode-batch shapes it is for.  The worker checks each config, times it (dozens of
launches on one workspace) and checks it again, so a tile counter the last CTA failed to reset shows
as a wrong second check."""

import random

import pytest

from autosched.build import BuildCache, Builder
from autosched.measure.gpu import GpuRunner
from autosched.measure.protocol import Protocol
from autosched.templates.hgemm_stream import HgemmStreamTemplate, registers_needed, smem_bytes
from autosched.workloads import Hgemm

pytestmark = pytest.mark.gpu

SHAPES = ["1x264x4104_bt", "37x72x40_bt", "100x1000x2056_bt_bf16", "128x4096x4096_bt", "16x11008x4096_bt",
          "256x264x200_bt"]


def picks(t, w, device) -> list[dict]:
    """The default, the deepest split, the most shared memory, the most registers a thread, the
    widest CTA along K, and two at random; none twice."""
    cfgs = t.space(w, device).enumerate()
    smem = lambda c: smem_bytes(c["rw"], c["wn"], c["wk"], c["mt"], c["kw"], c["stages"])  # noqa: E731
    out = [t.default_config(w, device), max(cfgs, key=lambda c: (c["split_k"], smem(c))), max(cfgs, key=smem),
           max(cfgs, key=lambda c: (registers_needed(c["rw"], c["mt"]), c["wn"] * c["wk"])),
           max(cfgs, key=lambda c: (c["wk"], c["kw"], c["split_k"]))]
    out += random.Random(w.M).sample(cfgs, 2)
    return [c for i, c in enumerate(out) if c not in out[:i]]


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    t = HgemmStreamTemplate()
    with GpuRunner(protocol=Protocol(flush_bytes=1 << 24, warmup=2, repeat=10), timeout_s=60) as runner, \
            Builder(cache=BuildCache(tmp_path_factory.mktemp("stream"))) as builder:
        dev = runner.device_info
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
def test_stream_is_correct(measured, shape):
    rows = [(info, m) for info, m in measured if info[0] == shape]
    assert rows
    lost = [info for info, m in rows if m is None]
    assert not lost, f"{len(lost)} configs never came back, e.g. {lost[:2]}"
    bad = [(*info, m.status.value, f"max_abs_err={m.max_abs_err}", (m.error or "")[:300]) for info, m in rows
           if not m.ok]
    assert not bad, f"{len(bad)} of {len(rows)} failed:\n" + "\n".join(map(str, bad[:6]))


def test_split_k_configs_were_run(measured):
    assert any(info[1]["split_k"] > 1 and m is not None and m.ok for info, m in measured)
