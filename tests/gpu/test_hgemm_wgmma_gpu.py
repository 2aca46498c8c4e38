"""On an sm_90 GPU: the wgmma + TMA GEMM at the corners of its space is correct (vs float64, output
poisoned with NaN first, checked before and after timing by the worker) on shapes that fit no tile
and on one with more tiles than SMs (the persistent loop and the ring's phases wrap), in every
layout it serves, in FP16 and BF16."""

import random

import pytest

from autosched.build import BuildCache, Builder
from autosched.measure.gpu import GpuRunner
from autosched.measure.protocol import Protocol
from autosched.templates import HgemmWgmmaTemplate
from autosched.templates.hgemm_wgmma import m_blocks, smem_bytes
from autosched.workloads import Hgemm

pytestmark = pytest.mark.gpu

# M is a multiple of 8 where A is stored (K, M) (the workload's rule), so tn/tt use 296 for 300
SHAPES = {"n": ["300x264x200", "128x128x64", "1000x1032x504", "72x136x8"],
          "t": ["296x264x200", "128x128x64", "1000x1032x504", "72x136x8"]}


def corners(t, w, device):
    cfgs = t.space(w, device).enumerate()
    smem = lambda c: smem_bytes(c["bm"], c["bn"], c["swizzle"], c["stages"])  # noqa: E731
    keys = [smem,                                                         # deepest ring, largest tile
            lambda c: (-c["bm"] * c["bn"], -c["swizzle"], -c["stages"]),   # 64 x 64, 32B swizzle, 2 slots
            lambda c: (c["consumers"] == 1, m_blocks(c["bm"], c["consumers"]), c["bn"]),   # 1 consumer, 2 m64
            lambda c: (c["consumers"] == 2, m_blocks(c["bm"], c["consumers"]), -c["stages"]),  # BM 256
            lambda c: (c["swizzle"] == 64, c["bn"] == 192, c["group"])]    # 64B swizzle, N 192, groups
    out = [t.default_config(w, device)]
    for k in keys:
        c = max(cfgs, key=k)
        if c not in out:
            out.append(c)
    return out + [c for c in random.Random(0).sample(cfgs, min(2, len(cfgs))) if c not in out]


LAYOUTS, DTYPES = ("nt", "nn", "tn", "tt"), ("fp16", "bf16")


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    """Every (shape, layout, dtype, corner config) through one worker: (what, Measurement) by
    (layout, dtype); one GPU worker start and one parallel build for the whole module."""
    t = HgemmWgmmaTemplate()
    with GpuRunner(protocol=Protocol(flush_bytes=1 << 24, warmup=1, repeat=3), timeout_s=60) as runner, \
            Builder(cache=BuildCache(tmp_path_factory.mktemp("wgmma"))) as builder:
        dev = runner.device_info
        if t.device_refuses(dev):
            pytest.skip(t.device_refuses(dev))
        items, what = [], {}
        for layout in LAYOUTS:
            for dtype in DTYPES:
                for shape in SHAPES[layout[0]]:
                    w = Hgemm.from_shape(shape, layout=layout, dtype=dtype)
                    for c in corners(t, w, dev):
                        spec = t.render(w, c, dev)
                        what[len(items)] = (layout, dtype, shape, c, spec.name_expression)
                        items.append((len(items), spec, builder.submit(spec)))
        results = dict(runner.measure_stream(items))
    out = {}
    for i, info in what.items():
        out.setdefault(info[:2], []).append((info, results.get(i)))
    return out


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_corner_configs_are_correct_on_ragged_shapes(measured, layout, dtype):
    rows = measured[(layout, dtype)]
    lost = [info for info, m in rows if m is None]
    assert not lost, f"{len(lost)} configs never came back, e.g. {lost[:2]}"
    bad = [(*info, m.status.value, f"max_abs_err={m.max_abs_err}", (m.error or "")[:300])
           for info, m in rows if not m.ok]
    assert not bad, f"{len(bad)} of {len(rows)} failed; first ones:\n" + "\n".join(map(str, bad[:6]))
