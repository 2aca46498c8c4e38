"""On a GPU: the persistent decode step (one cooperative kernel a step, Engine(persistent=True))
against the per-kernel step of the same fp16 weights: logits over 32 steps, greedy tokens, with and
without a CUDA graph, on stories15M and a GQA model of Llama-3.2-1B's layer shape."""

import numpy as np
import pytest

from autosched.models.llama2c import SEED_CONFIGS, LlamaConfig

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")

# Llama-3.2-1B's layer (dim 2048, 32 heads over 8 kv heads, hidden 8192), 4 layers and a 32000-token
# vocabulary to keep the test short; the bench stage runs the whole model
GQA_1B = LlamaConfig(2048, 8192, 4, 32, 8, 32000, 512, rope_theta=500000.0)
STEPS = 32
# max |diff| / max |logit|: both paths round the same fp16 activations; they differ in summation
# order (ss[0] over 256 vs 1024 threads, atomics, attention slices), so a half may round apart
TOL = 5e-3



def _weights(cfg):
    from autosched.engine.weights import random_weights_torch
    return random_weights_torch(cfg, 3, "cuda")


@pytest.mark.parametrize("name", ["stories15M", "gqa-1b"])
@pytest.mark.parametrize("graphs", [True, False])
def test_persistent_matches_the_per_kernel_step(builder, name, graphs):
    from autosched.engine.engine import Engine
    cfg = SEED_CONFIGS[name] if name in SEED_CONFIGS else GQA_1B
    w = _weights(cfg)
    ref = Engine(cfg, w, "fp16", builder=builder, graphs=graphs, batched_prefill=False)
    eng = Engine(cfg, w, "fp16", builder=builder, graphs=graphs, persistent=True,
                 batched_prefill=False)
    info = eng.persistent_info
    assert eng.kernels_per_step() == 1 and ref.kernels_per_step() == 5 * cfg.n_layers + 3
    assert info["blocks_per_sm"] == info["blocks_per_sm_model"], info      # the occupancy model is the driver's
    assert any(line.startswith("decode step: persistent") for line in eng.describe())
    # teacher-forced on the per-kernel step's greedy tokens: logits close, argmax the same where the
    # top two are further apart than the tolerance
    tok, worst = 1, 0.0
    for _ in range(STEPS):
        a = ref.step(tok).cpu().numpy().astype(np.float64)
        b = eng.step(tok).cpu().numpy().astype(np.float64)
        assert np.isfinite(b).all()
        worst = max(worst, float(np.abs(a - b).max() / np.abs(a).max()))
        top2 = np.sort(a)[-2:]
        if top2[1] - top2[0] > 2 * TOL * np.abs(a).max():
            assert eng.next_token() == ref.next_token() == int(np.argmax(a))
        assert eng.pos == ref.pos
        tok = ref.next_token()
    assert worst < TOL, worst
    # greedy on the device, from the same prompt: the same tokens
    prompt = [1, 5, 9]
    assert eng.generate(prompt, STEPS) == ref.generate(prompt, STEPS)


def test_persistent_state_survives_many_steps(builder):
    """The barrier and tickets carry over from launch to launch: a full context of steps replayed
    in one graph, then reset and replayed again, gives the same tokens."""
    from autosched.engine.engine import Engine
    cfg = SEED_CONFIGS["stories15M"]
    eng = Engine(cfg, _weights(cfg), "fp16", builder=builder, persistent=True, batched_prefill=False)
    eng.reset()
    eng.step(1)
    eng.decode(cfg.seq_len - 1)
    first = eng.next_token()
    assert int(eng.pos_d.item()) == eng.pos == cfg.seq_len
    eng.reset()
    eng.step(1)
    eng.decode(cfg.seq_len - 1)
    assert eng.next_token() == first
    assert int(eng.p["bar"][0].item()) == 0 and int(eng.p["best_count"].item()) == 0
    assert int(eng.p["count"].abs().sum().item()) == 0


@pytest.mark.parametrize("graphs", [True, False])
def test_phase_timeline_build_matches_and_tiles_the_step(builder, graphs):
    """The instrumented build (engine/phase_times.py) computes what the per-kernel step does, and its
    timeline accounts for the plain persistent step's wall time: the phases' slots add up to the
    step's span by construction, which must be within 10% of the wall time a step back to back."""
    from autosched.benchmarks.decode import engine_tokens_per_s
    from autosched.engine.engine import Engine
    from autosched.engine.phase_times import PhaseTimer, reduce
    from autosched.templates.persistent import phase_names
    cfg = GQA_1B
    w = _weights(cfg)
    ref = Engine(cfg, w, "fp16", builder=builder, graphs=graphs, batched_prefill=False)
    eng = Engine(cfg, w, "fp16", builder=builder, graphs=graphs, persistent=True, batched_prefill=False)
    tok, worst = 1, 0.0
    with PhaseTimer(eng, builder) as t:
        for _ in range(STEPS):
            a = ref.step(tok).cpu().numpy().astype(np.float64)
            b = t.step(tok).cpu().numpy().astype(np.float64)
            assert np.isfinite(b).all()
            worst = max(worst, float(np.abs(a - b).max() / np.abs(a).max()))
            tok = ref.next_token()
        t.records.clear()
        t.decode(64)
        times = t.times()
    assert worst < TOL, worst
    grid = eng.persistent_info["grid"]
    assert times.shape == (64, 5 * cfg.n_layers + 3, grid, 3)
    # every block wrote every phase's start and end, and every barrier's exit; argmax one block
    assert (times[:, :-1, :, :2] > 0).all() and (times[:, :-2, :, 2] > 0).all()
    assert ((times[:, -1, :, 0] > 0).sum(axis=1) == 1).all()
    # marks in order within a block: start <= end <= barrier exit <= the next phase's start
    t64 = times.astype(np.int64)
    assert (t64[:, :-1, :, 1] >= t64[:, :-1, :, 0]).all()
    assert (t64[:, :-2, :, 2] >= t64[:, :-2, :, 1]).all()
    assert (t64[:, 1:-1, :, 0] >= t64[:, :-2, :, 2]).all()
    res = reduce(times, cfg.n_layers)
    assert [r["phase"] for r in res["phases"]] == phase_names(cfg.n_layers)
    # medians per phase, summed, against the median step: close, not equal
    assert sum(r["slot_us"] for r in res["phases"]) == pytest.approx(res["step_us"], rel=0.05)
    assert all(r["span_us"] >= 0 for r in res["phases"]) and res["step_us"] > 0
    # the plain persistent step (the engine's own kernel again after the timer), back to back
    wall = engine_tokens_per_s(torch, eng, 64)["us_per_token"]
    assert abs(res["step_us"] - wall) <= 0.1 * wall, (res["step_us"], wall)
