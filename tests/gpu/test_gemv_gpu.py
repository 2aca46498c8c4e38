"""On a GPU: every template family's corner configs compute the right answer, and a kernel that
faults or hangs costs only its worker (recorded as failed; the next config measures normally)."""

import dataclasses

import pytest

from autosched.measure.gpu import GpuRunner
from autosched.measure.protocol import Protocol
from autosched.measure.result import Status
from autosched.templates import GemvQ4F16Template
from autosched.templates.gemv_q4f16 import extreme_configs
from autosched.workloads import GemvQ4F16

pytestmark = pytest.mark.gpu

SMALL = Protocol(flush_bytes=1 << 24, warmup=1, repeat=5)


@pytest.fixture(scope="module")
def runner():
    with GpuRunner(protocol=SMALL, timeout_s=20) as r:
        yield r



@pytest.mark.parametrize("shape", ["264x4128", "4096x4096"])
def test_corner_configs_of_every_family_are_correct(runner, builder, shape):
    t = GemvQ4F16Template()
    w = GemvQ4F16.from_shape(shape)
    cfgs = extreme_configs(t.space(w, runner.device_info).enumerate()) + [t.default_config(w, runner.device_info)]
    specs = [t.render(w, c, runner.device_info) for c in cfgs]
    results = dict(runner.measure_stream((i, s, builder.submit(s)) for i, s in enumerate(specs)))
    bad = [(cfgs[i], m.status.value, m.error) for i, m in results.items() if not m.ok]
    assert len(results) == len(cfgs)
    assert not bad, bad[:3]
    assert all(m.max_abs_err < 0.1 and m.median_us > 0 for m in results.values())


def _broken(spec, body: str):
    src = spec.source + (
        "\n__global__ void broken(const u32* a, const half* b, const half* c, half* out) {" + body + "}\n")
    return dataclasses.replace(spec, source=src, name_expression="broken")


def test_fault_and_hang_cost_only_the_worker(runner, builder):
    t = GemvQ4F16Template()
    w = GemvQ4F16(256, 4096)
    good = t.render(w, t.default_config(w, runner.device_info), runner.device_info)
    fault = _broken(good, "reinterpret_cast<int*>(16)[threadIdx.x] = 1;")
    # __nanosleep has a side effect the compiler must keep, so this loop really never ends
    hang = _broken(good, "for (;;) __nanosleep(1000);")
    restarts = runner.slots[0].restarts
    m_fault = runner.measure(fault, builder.build(fault))
    assert m_fault.status in (Status.LAUNCH_ERROR, Status.CRASH), m_fault
    assert runner.measure(good, builder.build(good)).ok
    m_hang = runner.measure(hang, builder.build(hang))
    assert m_hang.status == Status.TIMEOUT, m_hang
    assert runner.measure(good, builder.build(good)).ok
    assert runner.slots[0].restarts >= restarts + 2


def test_wrong_kernel_never_passes(runner, builder):
    t = GemvQ4F16Template()
    w = GemvQ4F16(256, 4096)
    good = t.render(w, t.default_config(w, runner.device_info), runner.device_info)
    # writes every output, but half of them wrong
    wrong = _broken(good, "int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < 256) out[i] = __float2half(i % 2);")
    wrong = dataclasses.replace(wrong, grid=(1, 1, 1), block=(256, 1, 1), smem_bytes=0)
    m = runner.measure(wrong, builder.build(wrong))
    assert m.status == Status.WRONG, m
    # and one that leaves outputs unwritten is caught by the NaN poison
    lazy = dataclasses.replace(_broken(good, "if (threadIdx.x == 0 && blockIdx.x == 0) out[0] = __float2half(0.f);"),
                               grid=(1, 1, 1), block=(32, 1, 1), smem_bytes=0)
    m = runner.measure(lazy, builder.build(lazy))
    assert m.status == Status.WRONG and "not finite" in m.error, m
