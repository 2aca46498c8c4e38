"""On an sm_90 GPU: hgemm_wgmma_splitk's split_k 2, 3, 4, 6 and 8 are correct against float64 on ragged
shapes (slices of unequal length, tiles clipped at M and N), the prefill shape split-K is for, and a
tn BF16 case.  The worker checks each config, times it (dozens of launches on the same workspace) and
checks it again, so a tile counter the last CTA failed to reset shows as a wrong second check; the
Launchable path (benchmarks, scripts) is checked twice in a row as well."""

import random

import numpy as np
import pytest

from autosched.build import Builder
from autosched.templates import HgemmWgmmaSplitKTemplate
from autosched.templates.hgemm_wgmma import smem_bytes
from autosched.workloads import Hgemm
from gemm_checks import assert_all_ok, measure_each

pytestmark = pytest.mark.gpu

SPLITS = [2, 3, 4, 6, 8]
SHAPES = ["136x264x4104_bt", "128x4096x4096_bt", "128x1032x4104_tn_bf16", "296x264x200_tt"]


def picks(t, w, device, split_k):
    """Of the configs with this split: the smallest tile, the most shared memory, the 128 x 64
    tile of two consumers (the prefill's), and one at random."""
    cfgs = [c for c in t.space(w, device) if c["split_k"] == split_k]
    if not cfgs:
        return []
    out = [min(cfgs, key=lambda c: (c["bm"] * c["bn"], c["swizzle"], c["stages"])),
           max(cfgs, key=lambda c: smem_bytes(c["bm"], c["bn"], c["swizzle"], c["stages"])),
           max(cfgs, key=lambda c: (c["bm"] == 128 and c["bn"] == 64 and c["consumers"] == 2, c["swizzle"]))]
    out += random.Random(split_k).sample(cfgs, 1)
    return [c for i, c in enumerate(out) if c not in out[:i]]


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    def cases(dev):
        for shape in SHAPES:
            w = Hgemm.from_shape(shape)
            for sk in SPLITS:
                yield from (((shape, sk, c), w, c) for c in picks(t, w, dev, sk))
    t = HgemmWgmmaSplitKTemplate()
    return measure_each(t, cases, tmp_path_factory.mktemp("splitk"))


@pytest.mark.parametrize("split_k", SPLITS)
def test_split_k_is_correct_and_resets_its_counters(measured, split_k):
    rows = [(info, m) for info, m in measured if info[1] == split_k]
    assert {info[0] for info, _ in rows} == set(SHAPES), "every shape has configs of this split"
    assert_all_ok(rows)


def test_launchable_twice_on_the_same_workspace():
    """benchmarks.common.Launchable zeroes the workspace once; two launches into a NaN-poisoned C
    both match float64 (the second finds the counters the first reset)."""
    torch = pytest.importorskip("torch")
    from cuda.core import Device, Stream

    from autosched.benchmarks.common import Launchable, checked_launch
    from autosched.device import query
    from autosched.runtime import allow_dynamic_smem
    info = query(0)
    t = HgemmWgmmaSplitKTemplate()
    if t.device_refuses(info):
        pytest.skip(t.device_refuses(info))
    Device(0).set_current()
    stream = Stream.from_handle(torch.cuda.current_stream().cuda_stream)
    w = Hgemm.from_shape("136x264x4104_bt")
    inputs = w.inputs(3)
    ref, bound = w.reference(inputs), w.error_bound(inputs)
    c = {"bm": 64, "bn": 64, "consumers": 1, "swizzle": 64, "stages": 4, "group": 1, "split_k": 3}
    spec = t.render(w, c, info)
    with Builder() as builder:
        k = Launchable(spec, builder.build(spec), inputs, torch.empty((w.M, w.N), dtype=torch.float16, device="cuda"))
    allow_dynamic_smem(k.kernel, spec.smem_bytes, 0)
    for _ in range(2):
        checked_launch(lambda s: k.launch(s), w, k.out, ref, stream, spec.name_expression, bound)
    ws = k._keep[0][1]["workspace"]
    tiles = -(-w.M // 64) * -(-w.N // 64)
    assert np.all(ws[: 4 * tiles].cpu().numpy() == 0), "the last CTA of each tile resets its counter"
