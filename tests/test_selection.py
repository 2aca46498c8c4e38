"""The one selection path: rank (database > same-device recording > default, across every template
of a workload), fastest (re-timed where it runs), best_known (what an export serves)."""

import dataclasses

import pytest

from autosched import registry
from autosched.database import Database
from autosched.measure.recording import Recording
from autosched.measure.result import Measurement, Status
from autosched.selection import (SIBLING, Candidate, NothingKnown, Origin, Timing, best_known, fastest, kinship, pick,
                                 rank, untuned)
from autosched.templates import GemvQ4F16Template
from synthetic_recording import synthetic  # noqa: F401  (fixture)
from autosched.identity import build_id, current_builds

CUR = build_id(GemvQ4F16Template())     # rows of the current build: the only ones that rank


def ok(us: float) -> Measurement:
    return Measurement(Status.OK, us, us, 0.0, 0.0)


# -- rank over the chain of sources -------------------------------------------------------------

def test_the_chain_of_sources(synthetic, tmp_path, monkeypatch):   # noqa: F811
    monkeypatch.setenv("AUTOSCHED_RECORDINGS", str(synthetic.dir))
    w, dev = synthetic.workload, synthetic.device
    rec = Recording.load(synthetic.path)
    best_rec = min(((m.median_us, c) for c, m in rec.entries.values() if m.ok), key=lambda tc: tc[0])
    t = GemvQ4F16Template()

    # no database: the recording taken on this very device key
    [c] = rank(w, dev)
    assert c.source.startswith("recording") and c.config == best_rec[1] and c.median_us == best_rec[0]
    assert c.template == t.family

    # a database row for this device wins over the recording
    with Database(tmp_path / "db") as db:
        cfg = t.default_config(w, dev)
        db.add(w.key, dev.key, t.family, cfg, Measurement(Status.OK, 1.0, 1.5, 0.1, 0.0), build=CUR)
        [c] = rank(w, dev, db)
        assert c.source == "database" and c.config == cfg and c.median_us == 1.5

    # another driver, or another GPU model of the same architecture and SM count: the recording
    # serves as a sibling's, said so (and counted untuned); the database's rows of the other key do not
    for other in (dataclasses.replace(dev, driver_version="999.0"), dataclasses.replace(dev, name="NVIDIA H200")):
        with Database(tmp_path / "db") as db:
            [c] = rank(w, other, db)
        assert c.config == best_rec[1] and c.median_us == best_rec[0]
        assert SIBLING in c.source and untuned(c)
    assert kinship(other, dev) == 2 and kinship(dataclasses.replace(dev, driver_version="999.0"), dev) == 1
    # another architecture or SM count: nothing of this GPU applies as measured; another GPU model
    # is served what a model of every other GPU model's recordings predicts (the GPU as features),
    # one of the same name under another architecture the default
    pcie = dataclasses.replace(dev, name="NVIDIA H100 PCIe", sm_count=114)
    for other in (dataclasses.replace(dev, cc=(8, 9)), pcie):
        with Database(tmp_path / "db") as db:
            [c] = rank(w, other, db)
        assert kinship(other, dev) is None and untuned(c) and c.template == t.family
        if other is pcie:
            assert c.origin == Origin.OTHER_GPUS_PREDICTED and dev.name in c.source
            assert t.space(w, other).contains(c.config)
        else:
            assert c.source == "default" and c.config == t.default_config(w, other) and c.median_us is None


def test_rank_fastest_first_from_the_first_source_that_has_any(synthetic, tmp_path, monkeypatch):  # noqa: F811
    monkeypatch.setenv("AUTOSCHED_RECORDINGS", str(synthetic.dir))
    w, dev = synthetic.workload, synthetic.device
    rec = Recording.load(synthetic.path)
    want = sorted((m.median_us for _, m in rec.entries.values() if m.ok))[:5]
    got = rank(w, dev, k=5)
    assert [c.median_us for c in got] == want and all(c.source.startswith("recording") for c in got)
    assert len({str(sorted(c.config.items())) for c in got}) == 5

    t = GemvQ4F16Template()
    space = list(t.space(w, dev))
    with Database(tmp_path / "db") as db:
        # the database answers alone once it has a row; a config that failed its check is left out
        for i, med in enumerate((3.0, 1.0, 2.0)):
            db.add(w.key, dev.key, t.family, space[i], ok(med), build=CUR)
        db.add(w.key, dev.key, t.family, space[3], Measurement(Status.WRONG, 0.1, 0.1, 0.0, 1.0), build=CUR)
        got = rank(w, dev, db, k=4)
    assert [c.config for c in got] == [space[1], space[2], space[0]]
    assert all(c.source == "database" for c in got)


def test_rank_skips_configs_outside_the_space_and_other_device_keys(synthetic, tmp_path, monkeypatch):  # noqa: F811
    monkeypatch.setenv("AUTOSCHED_RECORDINGS", str(synthetic.dir))
    w, dev = synthetic.workload, synthetic.device
    t = GemvQ4F16Template()
    space = list(t.space(w, dev))
    outside = dict(space[0], ts=3)                 # no such value in the space
    assert not t.space(w, dev).contains(outside)
    with Database(tmp_path / "db") as db:
        # rows of another device key, and a row outside the space: none counts, so the recording answers
        db.add(w.key, "another-gpu", t.family, space[5], ok(0.1), build=CUR)
        db.add(w.key, dev.key, t.family, outside, ok(0.2), build=CUR)
        assert rank(w, dev, db)[0].source.startswith("recording")
        # a row in the space answers, the faster one outside it still left out
        db.add(w.key, dev.key, t.family, space[7], ok(4.0), build=CUR)
        got = rank(w, dev, db, k=3)
    assert [(c.config, c.source) for c in got] == [(space[7], "database")]


def test_rank_passes_a_build_filter_to_the_database(synthetic, h100):     # noqa: F811
    seen = []

    class Db:
        def fastest(self, *args, **kw):
            seen.append(kw)
            return []
    w = synthetic.workload
    other = dataclasses.replace(h100, driver_version="999.0")
    rank(w, other, Db())
    rank(w, other, Db(), build="b1")
    rank(w, other, Db(), build="any")
    # the current build unless told otherwise: this source under the device key's NVRTC and this machine's
    current = current_builds(GemvQ4F16Template(), other.key)
    assert CUR in current.names and seen == [{"build": current}, {"build": "b1"}, {}]


class _OnlySome:
    """A space that holds only some of another's configs (a second template's narrower space)."""

    def __init__(self, space, allowed):
        self.space, self.allowed = space, allowed

    def contains(self, config):
        return self.space.contains(config) and config in self.allowed

    def __getattr__(self, name):        # the rest (knobs, nearest, ...) as the wider space has it
        return getattr(self.space, name)


class AltGemv(GemvQ4F16Template):
    family = "gemv_q4f16_alt"
    allowed: list = []

    def space(self, workload, device):
        return _OnlySome(super().space(workload, device), self.allowed)


@pytest.fixture
def two_templates(synthetic, monkeypatch):     # noqa: F811
    real, alt = GemvQ4F16Template(), AltGemv()
    space = list(real.space(synthetic.workload, synthetic.device))
    alt.allowed = space[10:20]
    order = [real, alt]
    monkeypatch.setattr(registry, "templates_for", lambda workload: list(order))
    return real, alt, space, order


def test_rank_merges_every_template_fastest_first(synthetic, tmp_path, two_templates):   # noqa: F811
    real, alt, space, order = two_templates
    w, dev = synthetic.workload, synthetic.device
    with Database(tmp_path / "db") as db:
        for cfg, us in ((space[0], 2.0), (space[1], 4.0), (space[2], 6.0)):
            db.add(w.key, dev.key, real.family, cfg, ok(us), build=CUR)
        for cfg, us in ((space[10], 1.0), (space[11], 3.0), (space[12], 5.0)):
            db.add(w.key, dev.key, alt.family, cfg, ok(us), build=build_id(alt))
        # faster than all, but outside the second template's own space: skipped for it only
        db.add(w.key, dev.key, alt.family, space[1], ok(0.5), build=build_id(alt))
        got = rank(w, dev, db, k=5)
    assert [(c.template, c.median_us) for c in got] == [
        (alt.family, 1.0), (real.family, 2.0), (alt.family, 3.0), (real.family, 4.0), (alt.family, 5.0)]
    assert [c.config for c in got] == [space[10], space[0], space[11], space[1], space[12]]
    assert all(c.source == "database" for c in got)


def test_rank_across_templates_the_default_is_the_first_templates(synthetic, tmp_path, two_templates):  # noqa: F811
    real, alt, space, order = two_templates
    # a GPU no recording is a sibling of (another architecture): nothing but its own database applies
    other = dataclasses.replace(synthetic.device, name="NVIDIA L40S", cc=(8, 9), sm_count=142)
    w = synthetic.workload
    with Database(tmp_path / "db") as db:
        # only the second template measured, on this device: it answers alone
        db.add(w.key, other.key, alt.family, space[15], ok(9.0), build=build_id(alt))
        assert [(c.template, c.config) for c in rank(w, other, db, k=3)] == [(alt.family, space[15])]
    order.reverse()
    [c] = rank(w, other, recordings=[])      # no GPU measured anything: not even a model of others
    assert (c.template, c.source) == (alt.family, "default")


# -- fastest: re-timed where it runs ------------------------------------------------------------

def cands(n: int) -> list[Candidate]:
    return [Candidate("t", {"i": i}, f"database #{i}", float(i)) for i in range(n)]


def test_fastest_keeps_the_minimum_and_says_how_it_won():
    cs = cands(4)
    here = {0: 9.0, 1: 7.25, 2: 3.04, 3: 3.04}          # a tie: the first of equal times wins
    best, timed = fastest(cs, lambda c: here[c.config["i"]], what="in a CUDA graph")
    assert best.config == {"i": 2} and best.median_us == 2.0 and best.template == "t"
    assert best.source == "database #2, fastest of 4 in a CUDA graph (3.0 us)"
    assert [t.candidate for t in timed] == cs and [t.us for t in timed] == [9.0, 7.25, 3.04, 3.04]
    assert all(t.ok and t.error is None for t in timed)
    best, _ = fastest(cs[:2], lambda c: here[c.config["i"]], what="in the decode step", shown="{:.0f} us a step")
    assert best.source == "database #1, fastest of 2 in the decode step (7 us a step)"


def test_fastest_records_errors_and_skips_them():
    cs = cands(3)
    calls = []

    def time_one(c):
        calls.append(c.config["i"])
        if c.config["i"] == 0:
            raise RuntimeError("failed its check")
        return 10.0 - c.config["i"]
    best, timed = fastest(cs, time_one, what="here")
    assert calls == [0, 1, 2]                            # every one timed, in order
    assert best.config == {"i": 2} and best.source == "database #2, fastest of 3 here (8.0 us; 1 failed)"
    assert not timed[0].ok and timed[0].us is None and isinstance(timed[0].error, RuntimeError)
    assert "failed its check" in str(timed[0].error)


def test_fastest_when_all_fail_serves_the_fallback_or_the_first():
    cs = cands(3)

    def boom(c):
        raise ValueError(f"no {c.config['i']}")
    best, timed = fastest(cs, boom, what="in a CUDA graph")
    assert best.config == cs[0].config                   # the ranking's own best
    assert best.source == "database #0; none of 3 could be timed in a CUDA graph"
    assert [str(t.error) for t in timed] == ["no 0", "no 1", "no 2"]
    served = Candidate("t", {"i": 9}, "served")
    best, _ = fastest(cs, boom, what="in the decode step", fallback=served)
    assert best.config == {"i": 9} and best.source == "served; none of 3 could be timed in the decode step"
    with pytest.raises(ValueError, match="no candidates"):
        fastest([], boom, what="here")
    # strict: every candidate failing is the context's fault, raised with the first error
    with pytest.raises(RuntimeError, match="none of the 3 candidates could be timed here; the first failed "
                                           "with ValueError: no 0") as e:
        fastest(cs, boom, what="here", strict=True)
    assert str(e.value.__cause__) == "no 0"


def test_pick_annotates_times_taken_elsewhere():
    cs = cands(3)
    got = pick([Timing(c, us) for c, us in zip(cs, (120.4, 119.6, 130.0))], what="in the decode step",
               shown="{:.0f} us a step, stored 2026-01-02")
    assert got.config == {"i": 1}
    assert got.source == "database #1, fastest of 3 in the decode step (120 us a step, stored 2026-01-02)"


# -- best_known: what an export serves ----------------------------------------------------------

def test_best_known_database_then_any_device_then_recording(synthetic, tmp_path, monkeypatch):   # noqa: F811
    monkeypatch.setenv("AUTOSCHED_RECORDINGS", str(synthetic.dir))
    w, dev = synthetic.workload, synthetic.device
    t = GemvQ4F16Template()
    space = list(t.space(w, dev))
    rec = Recording.load(synthetic.path)
    best_cfg, best_m = rec.best()
    with Database(tmp_path / "db") as db:
        # an empty database: the recording's best, whatever device it was taken on
        c = best_known(w, dev.key, db)
        assert (c.config, c.source, c.median_us) == (best_cfg, "best of recording x.json.gz", best_m.median_us)
        assert best_known(w).config == best_cfg
        db.add(w.key, "gpu-a", t.family, space[1], ok(3.0), build=CUR)
        db.add(w.key, "gpu-b", t.family, space[2], ok(2.0), build=CUR)
        db.add(w.key, "gpu-b", t.family, space[3], Measurement(Status.WRONG, 0.1, 0.1, 0.0, 1.0), build=CUR)
        # no device key, or one never measured: the fastest over every device key
        for key in (None, "gpu-c"):
            c = best_known(w, key, db)
            assert (c.config, c.source, c.median_us, c.template) == (space[2], "database best on gpu-b", 2.0, t.family)
        # this device key's best, though another's is faster
        c = best_known(w, "gpu-a", db)
        assert (c.config, c.source) == (space[1], "database best on gpu-a")


def test_best_known_across_templates_and_when_nothing_is(synthetic, tmp_path, two_templates):   # noqa: F811
    real, alt, space, order = two_templates
    w = synthetic.workload
    with Database(tmp_path / "db") as db:
        db.add(w.key, "gpu-a", real.family, space[1], ok(3.0), build=CUR)
        db.add(w.key, "gpu-a", alt.family, space[11], ok(2.0), build=build_id(alt))
        c = best_known(w, "gpu-a", db)
        assert (c.template, c.config, c.source) == (alt.family, space[11], "database best on gpu-a")
    from autosched.workloads import GemvQ4F16
    with Database(tmp_path / "db2") as db, pytest.raises(NothingKnown, match="nothing tuned for gemv_q4f16:N=4096,K=8192"):
        best_known(GemvQ4F16(4096, 8192), None, db)


def test_best_known_names_a_recording_where_nothing_passed(synthetic, tmp_path, monkeypatch):   # noqa: F811
    rec = Recording.load(synthetic.path)
    failed = Recording(rec.workload_key, rec.template, rec.device, rec.knobs, protocol={}, versions={},
                       date="2025-06-01", space_size=1)
    cfg, m = next(iter(rec.entries.values()))
    failed.add(cfg, dataclasses.replace(m, status=Status.WRONG))
    (tmp_path / "recs").mkdir()
    failed.save(tmp_path / "recs" / "bad.json.gz")
    with pytest.raises(NothingKnown, match="recording bad.json.gz holds no config that passed its check"):
        best_known(synthetic.workload, recordings=[tmp_path / "recs" / "bad.json.gz"])


# -- the engine's candidates come from rank -----------------------------------------------------

def test_engine_gemv_candidates_rank_and_pair_rows(h100, tmp_path):
    from autosched.engine.engine import gemv_candidates, matmul_shapes
    from autosched.models.llama2c import LlamaConfig
    from autosched.templates.gemv_q4f16 import blocks_pair_rows
    from autosched.workloads import GemvQ4F16
    cfg = LlamaConfig(dim=128, hidden_dim=352, n_layers=2, n_heads=4, n_kv_heads=2, vocab_size=512, seq_len=64)
    # a GPU no shipped recording is a sibling of: only its database answers as measured; elsewhere a
    # model of other GPU models' recordings (or the default), never measured here
    other = dataclasses.replace(h100, name="NVIDIA L40S", cc=(8, 9), sm_count=142)
    t = GemvQ4F16Template()
    n, k = matmul_shapes(cfg)["gate_up"]
    w = GemvQ4F16(n, k)
    space = list(t.space(w, other))
    odd = [c for c in space if not blocks_pair_rows(w, c)][:2]
    even = [c for c in space if blocks_pair_rows(w, c)][:2]
    with Database(tmp_path / "db") as db:
        for c, us in zip(odd + even, (1.0, 2.0, 3.0, 4.0)):
            db.add(w.key, other.key, t.family, c, ok(us), build=CUR)
        out = gemv_candidates(cfg, other, db, 3)
    # gate_up: the paired ones of the database's best, fastest first; the others: untuned
    assert [c.config for c in out["gate_up"]] == even and all(c.source == "database" for c in out["gate_up"])
    others = [c for nm, cs in out.items() if nm != "gate_up" and matmul_shapes(cfg)[nm] != (n, k) for c in cs]
    assert others and all(untuned(c) and c.template == t.family and
                          c.origin in (Origin.OTHER_GPUS_PREDICTED, Origin.DEFAULT) for c in others)


def test_hgemm_default_is_wgmma_where_it_runs_else_mma(h100):
    """The family default is the first template that claims it on the device: wgmma on sm_90
    (95% of cuBLAS untuned on the H100), mma.sync (listed first) on an sm_80 GPU."""
    import dataclasses

    from autosched.selection import default_candidate
    from autosched.workloads import Hgemm
    a100 = dataclasses.replace(h100, name="NVIDIA A100-SXM4-80GB", cc=(8, 0), sm_count=108)
    w = Hgemm.from_shape("4096x4096x4096")
    assert default_candidate(w, h100).template == "hgemm_wgmma"
    assert default_candidate(w, a100).template == "hgemm_mma"
    # a layout wgmma does not serve (the blocked one): the first template that serves it
    assert default_candidate(Hgemm.from_shape("4096x4096x4096_bb"), h100).template == "hgemm_wmma"


def test_the_origin_is_data_and_survives_a_re_timing(synthetic, tmp_path, monkeypatch):   # noqa: F811
    """What code asks of a candidate (untuned or not) is its origin, set by its source, kept when the
    candidate is re-timed and its text grows."""
    from autosched.selection import Origin
    monkeypatch.setenv("AUTOSCHED_RECORDINGS", str(synthetic.dir))
    w, dev = synthetic.workload, synthetic.device
    [c] = rank(w, dev)
    assert c.origin == Origin.RECORDING and not untuned(c)
    best, _ = fastest([c], lambda cand: 1.0, what="in a test")
    assert best.origin == Origin.RECORDING and best.source != c.source
    h200 = dataclasses.replace(dev, name="NVIDIA H200")
    [s] = rank(w, h200)
    assert s.origin == Origin.SIBLING and untuned(s)
    other = dataclasses.replace(dev, name="NVIDIA L40S", cc=(8, 9), sm_count=142)
    [p] = rank(w, other)
    assert p.origin == Origin.OTHER_GPUS_PREDICTED and untuned(p)
    [d] = rank(w, other, recordings=[])
    assert d.origin == Origin.DEFAULT and untuned(d)
