"""On an sm_90 GPU: hgemm_wgmma_cluster's clusters of 2 (pairs along M, B
multicast; along N, A multicast) are correct against float64 in every layout, FP16 and BF16, on
ragged shapes (tiles clipped at M and N, an odd tile count along the pair so the last pairs hold a
tile outside C), a long K, and 4096^3 (the persistent loop wraps the ring's phases many times).
The worker checks each config, times it and checks it again; the Launchable path (benchmarks,
scripts: launch_config's cluster) is checked twice in a row as well."""

import random

import pytest

from autosched.build import BuildCache, Builder
from autosched.measure.gpu import GpuRunner
from autosched.measure.protocol import Protocol
from autosched.templates import HgemmWgmmaClusterTemplate
from autosched.templates.hgemm_wgmma import smem_bytes
from autosched.workloads import Hgemm

pytestmark = pytest.mark.gpu

LAYOUTS, DTYPES, DIMS = ("nt", "nn", "tn", "tt"), ("fp16", "bf16"), ("m", "n")
# M a multiple of 8 where A is stored (K, M): tn/tt take 296 for 300.  1000 x 1032 in 64 x 64 tiles:
# 16 x 17 (odd along N); 296 x 264 in 128-row tiles: 3 along M (odd)
SHAPES = {"n": ["300x264x200", "1000x1032x504", "136x264x4104"], "t": ["296x264x200", "1000x1032x504", "136x264x4104"]}
BIG = "4096x4096x4096"


def picks(t, w, device, dim, n_random=1):
    """Of the pair configs along `dim`: the smallest tile (the most pairs, lone ones at the edges),
    the most shared memory, two consumers of 128 x 256 (the default's tile), and random ones."""
    cfgs = [c for c in t.space(w, device) if c["cluster_dim"] == dim]
    if not cfgs:
        return []
    out = [min(cfgs, key=lambda c: (c["bm"] * c["bn"], c["swizzle"], c["stages"])),
           max(cfgs, key=lambda c: smem_bytes(c["bm"], c["bn"], c["swizzle"], c["stages"])),
           max(cfgs, key=lambda c: (c["bm"] == 128 and c["bn"] == 256 and c["consumers"] == 2, c["stages"]))]
    out += random.Random(f"{w.key}{dim}").sample(cfgs, min(n_random, len(cfgs)))
    return [c for i, c in enumerate(out) if c not in out[:i]]


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    t = HgemmWgmmaClusterTemplate()
    with GpuRunner(protocol=Protocol(flush_bytes=1 << 24, warmup=1, repeat=3), timeout_s=60) as runner, \
            Builder(cache=BuildCache(tmp_path_factory.mktemp("cluster"))) as builder:
        dev = runner.device_info
        if t.device_refuses(dev):
            pytest.skip(t.device_refuses(dev))
        items, what = [], {}
        for layout in LAYOUTS:
            for dtype in DTYPES:
                shapes = SHAPES[layout[0]] + ([BIG] if dtype == "fp16" else [])
                for shape in shapes:
                    w = Hgemm.from_shape(shape, layout=layout, dtype=dtype)
                    for dim in DIMS:
                        for c in picks(t, w, dev, dim, n_random=0 if shape == BIG else 1):
                            spec = t.render(w, c, dev)
                            assert spec.cluster == (2, 1, 1)
                            what[len(items)] = (layout, dtype, shape, dim, c, spec.name_expression)
                            items.append((len(items), spec, builder.submit(spec)))
        results = dict(runner.measure_stream(items))
    return [(info, results.get(i)) for i, info in what.items()]


@pytest.mark.parametrize("dim", DIMS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_pairs_are_correct_on_ragged_shapes(measured, layout, dtype, dim):
    rows = [(info, m) for info, m in measured if info[:2] == (layout, dtype) and info[3] == dim]
    assert {info[2] for info, _ in rows} >= set(SHAPES[layout[0]]), "every shape has pair configs"
    lost = [info for info, m in rows if m is None]
    assert not lost, f"{len(lost)} configs never came back, e.g. {lost[:2]}"
    bad = [(*info, m.status.value, f"max_abs_err={m.max_abs_err}", (m.error or "")[:300]) for info, m in rows
           if not m.ok]
    assert not bad, f"{len(bad)} of {len(rows)} failed:\n" + "\n".join(map(str, bad[:6]))


def test_odd_tiles_along_the_pair_are_covered(measured):
    """The lone-pair path ran: configs whose tile count along their pair is odd, both ways."""
    odd = set()
    for (layout, dtype, shape, dim, c, _), m in measured:
        w = Hgemm.from_shape(shape, layout=layout, dtype=dtype)
        along = -(-w.M // c["bm"]) if dim == "m" else -(-w.N // c["bn"])
        if along % 2 and m is not None and m.ok:
            odd.add(dim)
    assert odd == {"m", "n"}


@pytest.mark.parametrize("dim", DIMS)
def test_launchable_twice(dim):
    """benchmarks.common.Launchable (launch_config with the cluster): two launches into a
    NaN-poisoned C both match float64."""
    torch = pytest.importorskip("torch")
    from cuda.core import Device, Stream

    from autosched.benchmarks.common import Launchable, checked_launch
    from autosched.device import query
    from autosched.runtime import allow_dynamic_smem
    info = query(0)
    t = HgemmWgmmaClusterTemplate()
    if t.device_refuses(info):
        pytest.skip(t.device_refuses(info))
    Device(0).set_current()
    stream = Stream.from_handle(torch.cuda.current_stream().cuda_stream)
    w = Hgemm.from_shape("1000x1032x504_bt")
    inputs = w.inputs(4)
    ref, bound = w.reference(inputs), w.error_bound(inputs)
    c = {"bm": 128, "bn": 128, "consumers": 2, "swizzle": 128, "stages": 4, "group": 4, "cluster_dim": dim}
    spec = t.render(w, c, info)
    with Builder() as builder:
        k = Launchable(spec, builder.build(spec), inputs, torch.empty((w.M, w.N), dtype=torch.float16, device="cuda"))
    allow_dynamic_smem(k.kernel, spec.smem_bytes, 0)
    for _ in range(2):
        checked_launch(lambda s: k.launch(s), w, k.out, ref, stream, spec.name_expression, bound)
