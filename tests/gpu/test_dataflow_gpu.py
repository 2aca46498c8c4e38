"""On a GPU: the dataflow decode step (one persistent kernel a step, engine/dataflow.py) against the
per-kernel step on the same weights, fp16 and q4f16_1: logits over many steps teacher-forced,
greedy tokens on the device, a grid of far fewer blocks than work items, a long context, and the
counters and tickets left at zero for the next step."""

import numpy as np
import pytest

from autosched.models.llama2c import LlamaConfig

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")

# Llama-3.2-1B's layer (dim 2048, 32 heads over 8 kv heads, hidden 8192), 4 layers, a 32000-token
# vocabulary, untied classifier
GQA_1B = LlamaConfig(2048, 8192, 4, 32, 8, 32000, 512, rope_theta=500000.0, shared_classifier=False)
TINY = LlamaConfig(256, 768, 2, 4, 2, 1000, 96)
# max |diff| / max |logit|: the two steps sum in other orders (and q4f16_1 in fp16 partials of
# eight products here, in the tuned GEMV's own order there)
TOL = {"fp16": 5e-3, "q4f16_1": 2e-2}


def _weights(cfg, seed=3):
    from autosched.engine.weights import random_weights_torch
    return random_weights_torch(cfg, seed, "cuda")


def _engines(builder, cfg, fmt, grid=None, graphs=True):
    from autosched.engine.dataflow import DataflowStep
    from autosched.engine.engine import Engine
    w = _weights(cfg)
    ref = Engine(cfg, w, fmt, builder=builder, graphs=graphs, batched_prefill=False, step="kernels", verify=1)
    eng = Engine(cfg, w, fmt, builder=builder, graphs=graphs, batched_prefill=False, step="kernels", verify=1)
    eng.flow = DataflowStep(eng, w, builder, grid=grid)
    eng.flow_served = True
    return ref, eng


def _compare(ref, eng, steps, tol, tok=1):
    worst = 0.0
    for _ in range(steps):
        a = ref.step(tok).cpu().numpy().astype(np.float64)
        b = eng.step(tok).cpu().numpy().astype(np.float64)
        assert np.isfinite(b).all()
        worst = max(worst, float(np.abs(a - b).max() / np.abs(a).max()))
        top2 = np.sort(a)[-2:]
        if top2[1] - top2[0] > 2 * tol * np.abs(a).max():
            assert eng.next_token() == ref.next_token() == int(np.argmax(a))
        assert eng.pos == ref.pos
        tok = ref.next_token()
    return worst


@pytest.mark.parametrize("fmt", ["fp16", "q4f16_1"])
@pytest.mark.parametrize("graphs", [True, False])
def test_dataflow_matches_the_per_kernel_step(builder, fmt, graphs):
    ref, eng = _engines(builder, GQA_1B, fmt, graphs=graphs)
    assert eng.kernels_per_step() == 1
    assert any(line.startswith("decode step: dataflow") for line in eng.describe())
    worst = _compare(ref, eng, 40, TOL[fmt])
    assert worst < TOL[fmt], worst
    prompt = [1, 5, 9]
    assert eng.generate(prompt, 24) == ref.generate(prompt, 24)
    f = eng.flow
    assert int(f.done.abs().sum().item()) == 0 and int(f.best_count.item()) == 0
    assert int(f.count.abs().sum().item()) == 0


@pytest.mark.parametrize("fmt", ["fp16", "q4f16_1"])
@pytest.mark.parametrize("grid", [1, 3])
def test_grid_far_smaller_than_the_items(builder, fmt, grid):
    """Every chunk and attention item still runs once, nothing waits for a block that never runs."""
    ref, eng = _engines(builder, TINY, fmt, grid=grid)
    worst = _compare(ref, eng, TINY.seq_len - 2, TOL[fmt])
    assert worst < TOL[fmt], worst


@pytest.mark.parametrize("fmt", ["fp16", "q4f16_1"])
def test_every_knob_choice_matches(builder, fmt):
    from autosched.templates import dataflow as df
    ref, eng = _engines(builder, GQA_1B, fmt)
    for knobs in df.choices(GQA_1B, fmt):
        eng.flow.serve(knobs)
        ref.reset(), eng.reset()
        worst = _compare(ref, eng, 6, TOL[fmt])
        assert worst < TOL[fmt], (knobs, worst)


def test_long_context(builder):
    """Positions past 3000 of a 4096 context: attention split over the context in the same kernel."""
    cfg = LlamaConfig(2048, 8192, 2, 32, 8, 32000, 4096, rope_theta=500000.0)
    ref, eng = _engines(builder, cfg, "fp16")
    rng = np.random.default_rng(0)
    prompt = [int(t) for t in rng.integers(1, cfg.vocab_size, 3000)]
    ref.prefill(prompt)
    eng.prefill(prompt)
    worst = _compare(ref, eng, 16, TOL["fp16"], tok=prompt[-1])
    assert worst < TOL["fp16"], worst


def test_engine_auto_times_both_and_serves_the_faster(builder):
    from autosched.engine.engine import Engine
    w = _weights(GQA_1B)
    eng = Engine(GQA_1B, w, "fp16", builder=builder, batched_prefill=False, verify=1, step="auto")
    assert "kernels" in eng.flow_times and len(eng.flow_times) >= 2
    best = min(eng.flow_times, key=eng.flow_times.get)
    assert eng.flow_served == (best != "kernels")
    assert any("timed in the step" in line for line in eng.describe())
