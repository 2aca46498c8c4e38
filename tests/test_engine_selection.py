"""Engine's step verification without a GPU: the loop that times each q4f16_1 matmul's candidates
in the step (Engine._verify_in_step through selection.fastest) and the stored winner
(_step_winner), on an Engine whose kernels never load and whose step time is a table lookup.
tests/gpu/test_engine_gpu.py runs the same path on real kernels; this pins down the bookkeeping:
which candidate is served, what its source says, and when the times are stored."""

import datetime
import json

import pytest

torch = pytest.importorskip("torch")

from autosched.engine import engine as engine_mod  # noqa: E402
from autosched.engine.engine import Engine, matmul_shapes  # noqa: E402
from autosched.engine.matmul import Matmul  # noqa: E402
from autosched.models.llama2c import LlamaConfig  # noqa: E402
from autosched.selection import Candidate  # noqa: E402
from autosched.templates import GemvQ4F16Template  # noqa: E402
from autosched.workloads import GemvQ4F16  # noqa: E402

CFG = LlamaConfig(dim=128, hidden_dim=352, n_layers=2, n_heads=4, n_kv_heads=2, vocab_size=512, seq_len=64)


class FakeDb:
    def __init__(self):
        self.stored = []

    def add_verification(self, key, times):
        self.stored.append((key, times))

    def verification(self, key):
        hit = [t for k, t in self.stored if k == key]
        return (hit[-1], datetime.datetime(2027, 1, 15, 12).timestamp()) if hit else None


def fake_engine(monkeypatch, h100, step_us):
    """An Engine with three database candidates for qkv (the first in place) and one for o, whose
    step takes step_us[json of the qkv config in place] us (None: the step raises)."""
    t = GemvQ4F16Template()
    n, k = matmul_shapes(CFG)["qkv"]
    w = GemvQ4F16(n, k)
    cfgs = [c for i, c in enumerate(t.space(w, h100)) if i % 997 == 0][:3]
    no, ko = matmul_shapes(CFG)["o"]
    wo = GemvQ4F16(no, ko)
    cands = {"qkv": [Candidate(t.family, c, "database", 1.0 + i) for i, c in enumerate(cfgs)],
             "o": [Candidate(t.family, t.default_config(wo, h100), "default")]}
    monkeypatch.setattr(Matmul, "load", lambda self, builder: None)
    monkeypatch.setattr(Matmul, "add_layer_copies", lambda self, w, count: self.layers.extend([{}] * count))
    eng = Engine.__new__(Engine)
    eng.cfg, eng.fmt, eng.info, eng.act, eng.pdl, eng.splits = CFG, "q4f16_1", h100, "half", False, 1
    eng.dev, eng._graph, eng._stored_step, eng.graphs_enabled = torch.device("cpu"), None, None, True
    eng.candidates = cands
    eng.attn_prefetch, eng.prefetch_choices = 0, (0,)
    eng.prefetch_budget, eng.budget_choices = engine_mod.PREFETCH_BUDGETS[0], engine_mod.PREFETCH_BUDGETS[:1]
    eng.descent, eng.descent_moves = False, []
    eng.mm = {name: Matmul(name, "q4f16_1", *matmul_shapes(CFG)[name], "half", "half", h100,
                           choice=cs[0], epilogue=engine_mod.EPILOGUE[name]) for name, cs in cands.items()}
    for m in eng.mm.values():
        m.layers = [{}] * CFG.n_layers
    packed = []
    monkeypatch.setattr(Engine, "_pack", lambda self, weights, names, progress=None: packed.extend(names))
    monkeypatch.setattr(Engine, "reset", lambda self: None)

    def step(self, steps, reps):
        assert (steps, reps) == self._step_timing()
        us = step_us[json.dumps(self.mm["qkv"].choice.config, sort_keys=True)]
        if us is None:
            raise RuntimeError("launch failed")
        return (us - step_us.get("prefetch saves", {}).get(self.attn_prefetch, 0.0)
                - step_us.get("budget saves", {}).get(self.prefetch_budget, 0.0))
    monkeypatch.setattr(Engine, "_step_us", step)
    builder = type("B", (), {"build_many": lambda self, specs: iter(specs)})()
    return eng, cfgs, builder, packed


def key(c):
    return json.dumps(c, sort_keys=True)


def test_the_fastest_in_the_step_is_served_and_its_times_stored(monkeypatch, h100):
    times = {}
    eng, cfgs, builder, packed = fake_engine(monkeypatch, h100, times)
    times.update({key(cfgs[0]): 30.0, key(cfgs[1]): 20.0, key(cfgs[2]): 25.0})
    db = FakeDb()
    out = eng._verify_in_step({}, builder, None, db)
    assert list(out) == ["qkv"]                          # o has one candidate: nothing to time
    assert [(c.config, us) for c, us in out["qkv"]] == list(zip(cfgs, [30.0, 20.0, 25.0]))
    served = eng.mm["qkv"].choice
    assert served.config == cfgs[1] and packed == ["qkv"]         # another config: its weights packed again
    assert served.source == "database, fastest of 3 in the decode step (20 us a step)"
    assert [t for _, t in db.stored] == [{"qkv": [30.0, 20.0, 25.0]}]

    # the stored times serve the same winner, saying when they were stored
    stored = datetime.datetime(2027, 1, 15, 12).timestamp()
    w = eng._step_winner("qkv", [30.0, 20.0, 25.0], stored)
    assert w.config == cfgs[1]
    assert w.source == "database, fastest of 3 in the decode step (20 us a step, stored 2027-01-15)"


def test_a_candidate_that_fails_is_skipped_and_nothing_is_stored(monkeypatch, h100):
    times = {}
    eng, cfgs, builder, packed = fake_engine(monkeypatch, h100, times)
    times.update({key(cfgs[0]): 30.0, key(cfgs[1]): None, key(cfgs[2]): 25.0})
    db = FakeDb()
    out = eng._verify_in_step({}, builder, None, db)
    assert [us for _, us in out["qkv"]] == [30.0, None, 25.0]
    assert eng.mm["qkv"].choice.config == cfgs[2]
    assert eng.mm["qkv"].choice.source.endswith("(25 us a step; 1 failed)")
    assert db.stored == []


def test_when_every_candidate_fails_the_engine_says_so_and_keeps_the_one_in_place(monkeypatch, h100):
    """Every candidate failing in the step is a fault of the step's timing, not of three configs:
    the engine raises (before, it served the config in place and said nothing), and nothing is
    repacked or stored."""
    times = {}
    eng, cfgs, builder, packed = fake_engine(monkeypatch, h100, times)
    times.update({key(c): None for c in cfgs})
    db = FakeDb()
    with pytest.warns(RuntimeWarning, match="could not be timed in the decode step"), \
            pytest.raises(RuntimeError, match="none of the 3 candidates could be timed in the decode step"):
        eng._verify_in_step({}, builder, None, db)
    assert eng.mm["qkv"].choice.config == cfgs[0] and packed == []
    assert db.stored == []


@pytest.mark.parametrize("saves,want", [({0: 0.0, 4096: 3.0}, 4096), ({0: 0.0, 4096: -2.0}, 0)])
def test_attention_prefetch_is_kept_only_where_the_step_is_faster_with_it(monkeypatch, h100, saves, want):
    """After the matmuls, the step is timed with and without attention streaming gate_up into the
    L2; the faster is served and both times are stored beside the matmuls'."""
    times = {}
    eng, cfgs, builder, packed = fake_engine(monkeypatch, h100, times)
    times.update({key(cfgs[0]): 30.0, key(cfgs[1]): 20.0, key(cfgs[2]): 25.0, "prefetch saves": saves})
    eng.prefetch_choices = (0, 4096)
    db = FakeDb()
    out = eng._verify_in_step({}, builder, None, db)
    assert out["attn_prefetch"] == [(0, 20.0), (4096, 20.0 - saves[4096])]
    assert eng.attn_prefetch == want
    assert db.stored[0][1] == {"qkv": [30.0, 20.0, 25.0], "attn_prefetch": [20.0, 20.0 - saves[4096]]}


def test_the_prefetch_budget_that_makes_the_step_fastest_is_served_before_the_candidates_are_timed(monkeypatch, h100):
    """With several L2 prefetch budgets, the step is timed with each (every matmul recompiled with
    it, its weights kept) before the candidates; the fastest is served, every later candidate is
    compiled with it, and the budgets' times are stored beside the matmuls' and served again from
    the database."""
    times = {}
    eng, cfgs, builder, packed = fake_engine(monkeypatch, h100, times)
    budgets = (8 << 20, 2 << 20, 1 << 20)
    times.update({key(cfgs[0]): 30.0, key(cfgs[1]): 20.0, key(cfgs[2]): 25.0,
                  "budget saves": {8 << 20: 0.0, 2 << 20: 4.0, 1 << 20: 1.0}})
    eng.budget_choices = budgets
    built = []
    builder = type("B", (), {"build_many": lambda self, specs: iter(built.extend(specs) or specs)})()
    db = FakeDb()
    out = eng._verify_in_step({}, builder, None, db)
    assert out["prefetch_budget"] == [(8 << 20, 30.0), (2 << 20, 26.0), (1 << 20, 29.0)]
    assert eng.prefetch_budget == 2 << 20
    macro = f"-DAUTOSCHED_PREFETCH_BUDGET={2 << 20}ll"
    assert all(m.prefetch_budget == 2 << 20 and macro in m.spec.options for m in eng.mm.values())
    assert [us for _, us in out["qkv"]] == [26.0, 16.0, 21.0]          # the candidates, with the budget served
    later = built[len(budgets) * len(eng.mm):]                         # the candidates' specs, after the budgets'
    assert later and all(macro in s.options for s in later)
    assert sum(o.startswith("-DAUTOSCHED_PREFETCH_BUDGET=") for o in eng.mm["qkv"].spec.options) == 1
    assert db.stored[0][1] == {"prefetch_budget": [30.0, 26.0, 29.0], "qkv": [26.0, 16.0, 21.0]}
    assert '"prefetch_budget": [8388608, 2097152, 1048576]' in eng._verification_key()

    # an engine that finds the times stored serves the same budget and times nothing
    eng._stored_step = eng._stored_verification(db)
    assert eng._stored_step is not None
    again = eng._verify_in_step({}, builder, None, db)
    assert again["prefetch_budget"] == out["prefetch_budget"] and len(db.stored) == 1


def test_the_kernels_default_prefetch_budget_is_the_engines_first_choice():
    """pdl.cuh's default (what a kernel compiled without the macro asks for) is the budget the
    engine serves when it times none, so both name the same amount."""
    import re
    from autosched.templates.base import kernel_source
    m = re.search(r"#define AUTOSCHED_PREFETCH_BUDGET \((\d+)ll << (\d+)\)", kernel_source("pdl.cuh"))
    assert m is not None
    assert int(m.group(1)) << int(m.group(2)) == engine_mod.PREFETCH_BUDGETS[0]


def test_a_matmul_refuses_a_negative_prefetch_budget(h100):
    from autosched.engine.matmul import with_prefetch_budget
    spec = Matmul("o", "q4f16_1", *matmul_shapes(CFG)["o"], "half", "half", h100,
                  config=GemvQ4F16Template().default_config(GemvQ4F16(*matmul_shapes(CFG)["o"]), h100),
                  epilogue="residual").spec
    with pytest.raises(ValueError, match="prefetch budget is a number of bytes >= 0, got -1"):
        with_prefetch_budget(spec, -1)


def test_the_step_descent_serves_a_neighbour_that_wins_twice_and_stores_its_move(monkeypatch, h100):
    """With descent on, after the candidates the served qkv config is walked one knob at a time in
    the step: the one neighbour that makes the step faster (timed again after the served config)
    is served, its weights packed, its source saying how it got there; the move is stored under its
    own key and read back as the served candidate of a later engine."""
    times = {}
    eng, cfgs, builder, packed = fake_engine(monkeypatch, h100, times)
    times.update({key(cfgs[0]): 30.0, key(cfgs[1]): 20.0, key(cfgs[2]): 25.0})
    space = GemvQ4F16Template().space(GemvQ4F16(*matmul_shapes(CFG)["qkv"]), h100)
    from autosched.engine.descent import neighbours
    target = neighbours(space, cfgs[1])[-1]
    monkeypatch.setattr(Engine, "_step_us", lambda self, steps, reps: (
        17.0 if self.mm["qkv"].choice.config == target else times.get(key(self.mm["qkv"].choice.config), 26.0)))
    eng.descent = True
    db = FakeDb()
    eng._verify_in_step({}, builder, None, db)
    served = eng.mm["qkv"]
    assert served.choice.config == target and packed == ["qkv", "qkv"]
    changed = [k for k in target if target[k] != cfgs[1][k]]
    assert len(changed) == 1
    assert "then one knob at a time in the decode step: " in served.choice.source
    assert "(17 us a step against 20)" in served.choice.source
    assert [(m.name, m.config) for m in eng.descent_moves] == [("qkv", target)]
    (k1, _), (k2, moves) = db.stored
    assert k2 == eng._descent_key() != k1 and moves["moves"][0]["config"] == target
    # a later engine of the same key serves the stored move without timing
    eng.verification = {"qkv": (eng.candidates["qkv"][1], []), "o": (eng.candidates["o"][0], [])}
    again = eng._stored_descent(db)
    assert again["qkv"].config == target and again["qkv"].source.endswith("against 20, stored 2027-01-15)")
    eng.descent = False
    assert eng._stored_descent(db) == {}


def test_gate_up_prefetch_bytes_follow_the_matrix():
    # Llama-2-7B's gate_up (22016 x 4096 q4f16_1: 45 MB of words): the 16 MiB cap; a 1B's: 3/8 of it
    assert engine_mod.gate_up_prefetch_bytes(22016, 4096, "q4f16_1") == 16 << 20
    assert engine_mod.gate_up_prefetch_bytes(16384, 2048, "q4f16_1") == 3 * 16384 * 2048 // 16 // 16 * 16
    assert engine_mod.gate_up_prefetch_bytes(16384, 2048, "fp16") == 16 << 20


def test_the_step_keys_differ_only_in_what_they_store(monkeypatch, h100):
    """The verification, descent and step-choice keys are one set of fields and a 'what' (the
    choice adds the dataflow step's choices, source digest and mode): built from a dict, never by
    editing another key's JSON text, and the same strings as the databases of earlier versions hold."""
    import json
    from autosched.templates import dataflow as df
    eng, *_ = fake_engine(monkeypatch, h100, {})
    eng.step_mode = "auto"
    v, d, f = (json.loads(k) for k in (eng._verification_key(), eng._descent_key(), eng._flow_key()))
    assert (v.pop("what"), d.pop("what"), f.pop("what")) == ("decode step", "decode step descent", "decode step choice")
    assert v == d and {k: f[k] for k in v} == v
    assert f["dataflow_source"] == df.source_digest() and f["step"] == "auto"
    assert eng._descent_key() == eng._verification_key().replace('"what": "decode step"',
                                                                   '"what": "decode step descent"', 1)


def test_a_dataflow_choice_that_disagrees_is_never_timed_or_served(monkeypatch, h100):
    """Before the step choice is timed, every dataflow knob's logits are checked against the
    per-kernel step's: a wrong one (here the second) is dropped with a warning; the fastest of the
    rest and the per-kernel step is served."""
    import autosched.engine.step_tuning as step_tuning_mod
    from autosched.templates import dataflow as df
    good, bad = df.CHOICES[:2]

    class FakeFlow:
        def __init__(self, eng, weights, builder):
            self.choices, self.knobs = [good, bad], good

        def serve(self, k):
            self.knobs = k

    eng, *_ = fake_engine(monkeypatch, h100, {})
    eng.step_mode, eng.flow, eng.flow_served, eng.flow_times = "auto", None, False, {}
    monkeypatch.setattr(step_tuning_mod, "DataflowStep", FakeFlow)
    ref = torch.arange(6, dtype=torch.float32)
    monkeypatch.setattr(Engine, "step", lambda self, t: ref * t + (
        100.0 if self.flow_served and self.flow.knobs == bad else 0.0))
    timed = []

    def step_us(self, steps, reps):
        timed.append(self.flow.knobs if self.flow_served else "kernels")
        return 10.0 if self.flow_served else 12.0
    monkeypatch.setattr(Engine, "_step_us", step_us)
    with pytest.warns(UserWarning, match=f"dataflow step {bad.label()} disagrees"):
        eng._choose_step({}, None, None, FakeDb())
    assert timed == ["kernels", good] and eng.flow_served and eng.flow.knobs == good
    assert set(eng.flow_times) == {"kernels", good.label()}


def test_where_every_dataflow_choice_disagrees_the_per_kernel_step_is_served_untimed(monkeypatch, h100):
    import autosched.engine.step_tuning as step_tuning_mod
    from autosched.templates import dataflow as df

    class FakeFlow:
        def __init__(self, eng, weights, builder):
            self.choices, self.knobs = list(df.CHOICES[:2]), df.CHOICES[0]

        def serve(self, k):
            self.knobs = k

    eng, *_ = fake_engine(monkeypatch, h100, {})
    eng.step_mode, eng.flow, eng.flow_served, eng.flow_times = "auto", None, False, {}
    monkeypatch.setattr(step_tuning_mod, "DataflowStep", FakeFlow)
    monkeypatch.setattr(Engine, "step", lambda self, t: torch.arange(6, dtype=torch.float32) * t + (
        100.0 if self.flow_served else 0.0))
    monkeypatch.setattr(Engine, "_step_us", lambda self, steps, reps: pytest.fail("nothing is timed"))
    db = FakeDb()
    with pytest.warns(UserWarning, match="disagrees"):
        eng._choose_step({}, None, None, db)
    assert eng.flow is None and not eng.flow_served and eng.flow_times == {} and db.stored == []
