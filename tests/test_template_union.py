"""A workload served by several templates: the tuner searches the union of their spaces (the
template a knob), stores each result under its own template, resumes across the union, and the
best spans both."""

import dataclasses
import random

import pytest

from autosched.database import Database
from autosched.measure.recording import Recording, ReplayRunner
from autosched.space import ConfigError, Constraint, Knob, Space, SpaceUnion
from autosched.templates import GemvQ4F16Template
from autosched.tuner import tune
from synthetic_recording import synthetic  # noqa: F401  (fixture)


class AltTemplate(GemvQ4F16Template):
    """A second template of the same workload (same knobs, another family name)."""
    family = "gemv_q4f16_alt"


@pytest.fixture(scope="module")
def two(synthetic):
    """The synthetic recording, and a copy of it for the second template in which the configs with
    an odd hash are 3x faster: the union's optimum is in the second template."""
    first = synthetic.load()
    alt = Recording(first.workload_key, AltTemplate.family, first.device, first.knobs)
    for h, (cfg, m) in first.entries.items():
        if int(h, 16) % 2:
            m = dataclasses.replace(m, min_us=m.min_us / 3, median_us=m.median_us / 3)
        alt.add(cfg, m)
    return first, alt


def test_space_union_tags_configs_and_keeps_members_apart():
    a = Space([Knob("x", (1, 2, 4)), Knob("y", (1, 2))], [Constraint("x*y <= 4", ("x", "y"), lambda x, y: x * y <= 4)])
    b = Space([Knob("x", (8, 16)), Knob("z", ("p", "q"))])
    u = SpaceUnion({"a": a, "b": b})
    configs = u.enumerate()
    assert u.size() == a.size() + b.size() == len(configs) == 9
    assert {c["template"] for c in configs} == {"a", "b"}
    assert u.contains({"template": "a", "x": 2, "y": 2})
    assert not u.contains({"template": "a", "x": 4, "y": 2})          # a's rule
    assert not u.contains({"template": "b", "x": 2, "y": 2})          # a's knobs under b
    assert not u.contains({"x": 8, "z": "p"})                         # no template
    with pytest.raises(ConfigError, match="template must be one of"):
        u.validate({"template": "c", "x": 8})
    assert u.names[0] == "template" and set(u.names) == {"template", "x", "y", "z"}
    assert dict((k.name, k.values) for k in u.knobs)["x"] == (1, 2, 4, 8, 16)
    rng = random.Random(0)
    drawn = [u.sample(rng) for _ in range(50)]
    assert all(u.contains(c) for c in drawn) and {c["template"] for c in drawn} == {"a", "b"}
    for c in drawn:        # mutation never crosses templates
        assert all(n["template"] == c["template"] and u.contains(n) for n in u.neighbours(c))
    assert [r for r, _ in u.prune_report()] == ["a: x*y <= 4"]
    kept = u.restricted("odd x", lambda c: c["x"] in (1, 16))
    assert sorted((c["template"], c["x"]) for c in kept) == [("a", 1), ("a", 1), ("b", 16), ("b", 16)]


@pytest.mark.parametrize("strategy", ["random", "model", "evolutionary-model"])
def test_tune_searches_the_union_and_stores_per_template(synthetic, two, tmp_path, strategy):
    first, alt = two
    t1, t2 = synthetic.template, AltTemplate()
    with Database(tmp_path / "db") as db:
        res = tune(synthetic.workload, [t1, t2], ReplayRunner([first, alt]), db, strategy=strategy,
                   trials=400, seed=1)
        rows = {t: db.measured(synthetic.workload.key, first.device.key, t) for t in (t1.family, t2.family)}
    assert res.trials == res.measured_now == 400
    assert res.space_size == 2 * len(first.entries)
    # both templates measured, each row under its own template with that template's knobs only
    assert rows[t1.family] and rows[t2.family]
    assert sum(map(len, rows.values())) == 400
    assert all("template" not in r.config for rs in rows.values() for r in rs.values())
    # the best is the fastest ok row of either template, named with its template
    best_row = min((r for rs in rows.values() for r in rs.values() if r.measurement.ok),
                   key=lambda r: r.measurement.median_us)
    assert res.best.median_us == best_row.measurement.median_us
    assert res.best_template == best_row.template and res.best_knobs == best_row.config
    assert res.best_config == {"template": best_row.template, **best_row.config}
    if strategy != "random":
        # the second template holds the 3x faster half: a learned search ends up there
        assert res.best_template == t2.family


def test_union_run_resumes_from_both_templates_rows(synthetic, two, tmp_path):
    first, alt = two
    t1, t2 = synthetic.template, AltTemplate()
    with Database(tmp_path / "db") as db:
        one = tune(synthetic.workload, [t1, t2], ReplayRunner([first, alt]), db, strategy="random", trials=120, seed=4)
        again = tune(synthetic.workload, [t1, t2], ReplayRunner([first, alt]), db, strategy="random", trials=120, seed=4)
    assert one.measured_now == 120
    assert again.resumed == 120 and again.measured_now == 0
    assert again.best.median_us == one.best.median_us


def test_replay_searches_only_the_templates_it_has_recordings_of(synthetic, two, tmp_path):
    first, _ = two
    with Database(tmp_path / "db") as db:
        runner = ReplayRunner([first])
        res = tune(synthetic.workload, [synthetic.template, AltTemplate()], runner, db, strategy="random",
                   trials=50, seed=0)
        assert not db.measured(synthetic.workload.key, first.device.key, AltTemplate.family)
    assert res.best_template == synthetic.template.family
    assert res.space_size == len(first.entries)
    assert "no recording of gemv_q4f16_alt" in runner.coverage_note(synthetic.workload.key, AltTemplate.family, 10)


class EmptyTemplate(GemvQ4F16Template):
    """A template of the workload with no config for it (every point breaks a rule), so no default:
    split-K where the tiles fill the GPU, wgmma on a GPU without it."""
    family = "gemv_q4f16_none"

    def space(self, workload, device):
        sp = super().space(workload, device)
        first = sp.knobs[0].name
        return Space(sp.knobs, [*sp.constraints, Constraint("never on this shape", (first,), lambda v: False)])

    def default_config(self, workload, device):
        raise ConfigError("the space is empty")

    def derived_features(self, config, params, device):
        return {"only_mine": 1.0, **super().derived_features(config, params, device)}


def test_a_template_without_configs_is_passed_over(synthetic, two, tmp_path):
    """Among others, a template whose space is empty is left out of the union (nothing to search,
    no default to take its features from) yet named in the run; the others are tuned as before."""
    from autosched.tuner import SearchSpace
    first, alt = two
    ts = [synthetic.template, EmptyTemplate(), AltTemplate()]
    search = SearchSpace(synthetic.workload, ts, synthetic.device)
    assert search.empty == ["gemv_q4f16_none"] and search.size("gemv_q4f16_none") == 0
    assert [t.family for t in search.searched] == [ts[0].family, ts[2].family] and search.union
    assert search.size() == 2 * len(first.entries)
    assert search.empty_notes() == ["gemv_q4f16_none has no config for this shape (most removed by: never on "
                                    "this shape): not searched"]
    row = search.derived_features({"template": ts[0].family, **synthetic.configs[0]}, synthetic.workload.params)
    assert "only_mine" not in row and row == ts[0].derived_features(synthetic.configs[0], synthetic.workload.params,
                                                                   synthetic.device)
    with Database(tmp_path / "db") as db:
        res = tune(synthetic.workload, ts, ReplayRunner([first, alt]), db, strategy="model", trials=24, seed=1)
        assert not db.measured(synthetic.workload.key, first.device.key, EmptyTemplate.family)
    assert res.measured_now == 24 and res.template == "gemv_q4f16+gemv_q4f16_none+gemv_q4f16_alt"
    assert res.best_template in (ts[0].family, ts[2].family)
    # every template empty: nothing to search, and nothing breaks
    with Database(tmp_path / "db2") as db:
        other = type("OtherEmpty", (EmptyTemplate,), {"family": "gemv_q4f16_none2"})()
        res = tune(synthetic.workload, [EmptyTemplate(), other], ReplayRunner([first]), db, strategy="model", trials=10)
    assert res.trials == 0 and res.best is None
