"""The per-kernel step timeline's reduction (engine/kernel_timeline.py) on synthetic events."""
import pytest

from autosched.engine.kernel_timeline import (KernelEvent, base_name, events_from_chrome_trace, format_table, reduce, roles,
                                              split_steps)

LAYERS = 2


def step_events(t0: float, overlap: float = 0.5) -> list[KernelEvent]:
    """A step whose kernel i lasts i + 1 us and starts `overlap` us before its predecessor ends."""
    ev, t = [], t0
    for i, role in enumerate(roles(LAYERS)):
        name = {"embed": "void embed_norm<__half, 1024>(float *)", "attn": "void rope_attention<__half, 256>()",
                "argmax": "argmax_step"}.get(role, f"void gemv_q4f16_fused<{i}, 4096>(const unsigned *)")
        start = t - (overlap if i else 0.0)
        ev.append(KernelEvent(name, start, start + i + 1))
        t = start + i + 1
    return ev


def test_base_name():
    assert base_name("void gemv_q4f16_fused<12288, 4096, 1>(const unsigned int *, float)") == "gemv_q4f16_fused"
    assert base_name("argmax_step") == "argmax_step"


def test_split_steps_drops_partial_steps_and_sorts():
    a, b = step_events(0.0), step_events(1000.0)
    partial = step_events(2000.0)[:5]
    events = list(reversed(a + b + partial)) + step_events(-500.0)[3:]
    steps = split_steps(events, len(roles(LAYERS)))
    assert [s[0].start_us for s in steps] == [0.0, 1000.0]


def test_reduce_advances_tile_the_span():
    steps = split_steps(step_events(0.0) + step_events(200.0) + step_events(400.0), len(roles(LAYERS)))
    t = reduce(steps, LAYERS, {"qkv": 2.0})
    n = len(roles(LAYERS))
    # kernel i lasts i + 1 and overlaps its predecessor by 0.5: the span is sum(i + 1) - 0.5 (n - 1)
    assert t["step_span_us"] == pytest.approx(n * (n + 1) / 2 - 0.5 * (n - 1))
    assert sum(r["advance_sum_us"] for r in t["roles"].values()) == pytest.approx(t["step_span_us"])
    assert sum(r["share"] for r in t["roles"].values()) == pytest.approx(1.0)
    # qkv is kernel 1 (lasts 2) and 6 (lasts 7): advances 1.5 and 6.5
    q = t["roles"]["qkv"]
    assert q["kernels"] == LAYERS and q["dur_us"] == pytest.approx(4.5) and q["advance_us"] == pytest.approx(4.0)
    assert q["overlap_us"] == pytest.approx(0.5) and q["advance_over_floor"] == pytest.approx(2.0)
    assert t["roles"]["embed"]["overlap_us"] == 0.0
    assert t["step_gap_us"] == pytest.approx(200.0 - t["step_span_us"])
    text = "\n".join(format_table(t))
    assert "gate_up" in text and "step span" in text


def test_reduce_refuses_empty_and_wrong_length():
    with pytest.raises(ValueError, match="no whole step"):
        reduce([], LAYERS)
    with pytest.raises(ValueError, match="a step of 3 kernels"):
        reduce([step_events(0.0)[:3]], LAYERS)


def test_events_from_chrome_trace_keeps_gpu_kernels():
    trace = {"traceEvents": [
        {"cat": "kernel", "name": "void embed_norm<__half, 1024>()", "ts": 10.5, "dur": 2.0},
        {"cat": "cuda_runtime", "name": "cudaGraphLaunch", "ts": 9.0, "dur": 4.0},
        {"cat": "kernel", "name": "argmax_step", "ts": 20.0, "dur": 1.25},
        {"cat": "kernel", "name": "a marker without a duration", "ts": 30.0, "ph": "i"}]}
    ev = events_from_chrome_trace(trace)
    assert ev == [KernelEvent("void embed_norm<__half, 1024>()", 10.5, 12.5), KernelEvent("argmax_step", 20.0, 21.25)]
    assert events_from_chrome_trace({}) == []
