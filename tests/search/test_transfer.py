"""Knowledge that transfers between shapes (search/transfer.py): the cost model of every shape
measured on a GPU model, the selection chain's "predicted" source, and the tuner's warm start."""

import dataclasses
import math

import numpy as np
import pytest

pytest.importorskip("sklearn")

from autosched.measure.recording import Recording, find_recording  # noqa: E402
from autosched.measure.result import Measurement, Status  # noqa: E402
from autosched.search import transfer  # noqa: E402
from autosched.selection import rank  # noqa: E402
from autosched.templates import GemvQ4F16Template  # noqa: E402
from autosched.workloads import GemvQ4F16  # noqa: E402

T = GemvQ4F16Template()
UNRECORDED = GemvQ4F16(6144, 4096)        # Mistral-7B's qkv: no shipped recording holds it


@pytest.fixture(autouse=True)
def fresh_cache(tmp_path, monkeypatch):
    """Predictions cached in a folder of the test's own, and nothing memoized from another test."""
    monkeypatch.setenv("AUTOSCHED_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(transfer, "_answers", {})
    monkeypatch.setattr(transfer, "_models", {})


@pytest.fixture
def strategy_context(monkeypatch) -> dict:
    """The context (prior, scale, ...) the tuner hands its strategy, filled when a tune makes one."""
    from autosched import tuner
    seen = {}
    real = tuner.make_strategy

    def spy(name, space, seed=0, **context):
        seen.update(context)
        return real(name, space, seed, **context)
    monkeypatch.setattr(tuner, "make_strategy", spy)
    return seen


def synthetic_time(cfg: dict, n: int, k: int, device) -> float:
    """A smooth made-up GEMV time: streaming the bytes, slower the further a block is from 128
    threads and the fewer waves fill the GPU, plus a launch."""
    d = T.derived_features(cfg, {"N": n, "K": k}, device)
    return 3.0 + n * k / 2 / 3e6 * (1 + 0.3 * abs(math.log2(d["threads"]) - 7) + 0.5 / min(1.0, d["waves"]))


def synthetic_recording(n: int, k: int, device, count: int = 120, seed: int = 0) -> Recording:
    w = GemvQ4F16(n, k)
    space = T.space(w, device)
    configs = space.enumerate()
    rng = np.random.default_rng(seed)
    rec = Recording(w.key, T.family, device, space.names, date="2026-11-23", space_size=len(configs))
    for i in rng.choice(len(configs), size=min(count, len(configs)), replace=False):
        us = synthetic_time(configs[i], n, k, device)
        rec.add(configs[i], Measurement(Status.OK, us, us, 0.0, 0.0))
    return rec


# -- the "predicted" source of the selection chain -----------------------------------------------

def test_an_unrecorded_shape_is_served_the_predicted_config(h100):
    # h100 is the device key the shipped recordings were taken on
    assert find_recording(UNRECORDED.key, T.family) is None
    [c] = rank(UNRECORDED, h100)
    assert c.source.startswith("predicted") and c.template == T.family
    assert T.space(UNRECORDED, h100).contains(c.config) and c.median_us > 0
    top = rank(UNRECORDED, h100, k=4)
    assert len(top) == 4 and [x.median_us for x in top] == sorted(x.median_us for x in top)


def test_a_recorded_shape_is_still_served_its_recording(h100):
    w = GemvQ4F16(4096, 4096)
    [c] = rank(w, h100)
    assert c.source.startswith("recording")


def test_a_sibling_gpu_gets_the_prediction_of_its_siblings_measurements(h100):
    """An H200 (the H100's chip, other memory) with nothing measured on it: the cost model of the
    H100's measurements predicts, and says whose they are; another architecture gets the model of
    every other GPU model's recordings, the GPU as features, said so."""
    from autosched.selection import SIBLING, Origin, untuned
    h200 = dataclasses.replace(h100, name="NVIDIA H200", driver_version="999.0")
    [c] = rank(UNRECORDED, h200)
    assert c.source.startswith("predicted") and SIBLING in c.source and h100.name in c.source and untuned(c)
    assert c.config == transfer.predicted(UNRECORDED, T, h100, k=1)[0][0]
    other = dataclasses.replace(h100, name="NVIDIA L40S", cc=(8, 9), sm_count=142)
    [c] = rank(UNRECORDED, other)
    assert c.origin == Origin.OTHER_GPUS_PREDICTED and untuned(c) and "other GPU models" in c.source
    assert h100.name in c.source and T.space(UNRECORDED, other).contains(c.config)


def test_a_gpu_model_nobody_measured_gets_a_model_of_the_others(h100):
    """Recordings of two GPU models with other SM counts (the synthetic time depends on the waves a
    config fills, so each GPU has its own best): the model of both, each sample's derived features
    taken on its own GPU, ranks a third GPU model's unseen shape near its true best, and the GPUs'
    columns are in its features."""
    a = dataclasses.replace(h100, name="GPU A", sm_count=132)
    b = dataclasses.replace(h100, name="GPU B", sm_count=40, cc=(8, 9))
    shapes = [(288, 288), (864, 288), (288, 768), (1536, 288)]
    recs = [synthetic_recording(n, k, g, seed=i) for g in (a, b) for i, (n, k) in enumerate(shapes)]
    c = dataclasses.replace(h100, name="GPU C", sm_count=78, cc=(8, 6))
    w = GemvQ4F16(576, 288)
    top, names = transfer.predicted_across_gpus(w, T, c, recordings=recs, k=1)
    assert names == ["GPU A", "GPU B"] and T.space(w, c).contains(top[0][0])
    times = sorted(synthetic_time(x, 576, 288, c) for x in T.space(w, c).enumerate())
    assert synthetic_time(top[0][0], 576, 288, c) <= times[len(times) // 10]
    samples, devices = transfer.across_gpus(T, c, recs)
    assert {d.name for d in devices} == {"GPU A", "GPU B"}
    assert all(set(transfer.GPU_FEATURES) <= set(p) for _, p, _ in samples)
    # a GPU's own recordings are not "other GPU models'"
    assert transfer.predicted_across_gpus(w, T, a, recordings=recs[:4]) == ([], [])


def test_a_prediction_is_cached_on_disk(h100, monkeypatch):
    first = transfer.predicted(UNRECORDED, T, h100, k=3)
    assert len(first) == 3 and list(transfer.cache_dir().glob("*.json"))
    # a new process (nothing memoized) reads the answer back without fitting
    monkeypatch.setattr(transfer, "_answers", {})
    monkeypatch.setattr(transfer, "_models", {})
    monkeypatch.setattr(transfer, "fit", lambda *a, **kw: pytest.fail("fitted again despite the cache"))
    assert transfer.predicted(UNRECORDED, T, h100, k=3) == first


def test_nothing_is_predicted_from_too_little(h100):
    one = synthetic_recording(288, 288, h100, count=40)
    assert transfer.predicted(UNRECORDED, T, h100, recordings=[one]) == []
    assert not transfer.enough(transfer.recorded_samples([one]))


def test_a_model_of_other_shapes_ranks_an_unseen_one(h100):
    recs = [synthetic_recording(n, k, h100, seed=i) for i, (n, k) in
            enumerate([(288, 288), (864, 288), (288, 768), (1536, 288)])]
    w = GemvQ4F16(576, 288)
    space = T.space(w, h100)
    configs = space.enumerate()
    top = transfer.predicted(w, T, h100, recordings=recs, k=1)
    assert top and space.contains(top[0][0])
    times = sorted(synthetic_time(c, 576, 288, h100) for c in configs)
    got = synthetic_time(top[0][0], 576, 288, h100)
    # far better than a config picked at random (the median of the space)
    assert got <= times[len(times) // 4]


def test_the_tuner_learns_from_other_shapes_recordings(h100, strategy_context, tmp_path):
    """A model-guided search of a new shape starts from the recordings of the others (of this GPU
    model), but never from the recording a replay answers from."""
    from autosched import tuner
    from autosched.database import Database
    from autosched.measure.recording import ReplayRunner
    held = synthetic_recording(288, 288, h100, seed=1)
    others = [synthetic_recording(864, 288, h100, seed=2), synthetic_recording(288, 768, h100, seed=3)]
    seen = strategy_context
    with Database(tmp_path / "db") as db:
        res = tuner.tune(GemvQ4F16(288, 288), T, ReplayRunner(held), db, strategy="model", trials=16, batch=16,
                         recordings=[held, *others])
    shapes = {tuple(sorted(p.items())) for _, p, _ in seen["prior"]}
    assert shapes == {(("K", 288), ("N", 864)), (("K", 768), ("N", 288))}
    assert len(seen["prior"]) == sum(len(r.entries) for r in others) and seen["scale"] is not None
    assert res.trials == 16 and res.best is not None


# -- the transfer benchmark's logic -----------------------------------------------------------------

def test_leave_one_out_on_a_synthetic_set(h100):
    from autosched.benchmarks.transfer import leave_one_out, summary
    recs = [synthetic_recording(n, k, h100, count=80, seed=i) for i, (n, k) in
            enumerate([(288, 288), (864, 288), (288, 768)])]
    rows = leave_one_out(recs, T, trials=(4, 16))
    assert [r["workload"] for r in rows] == [r.workload_key for r in recs]
    for r in rows:
        assert r["shapes_learned_from"] == 2 and r["trials16_ran"] == 16
        assert 0 < r["zero_trial_vs_16"] <= 1.0 + 1e-9 and 0 < r["trials4_vs_16"] <= 1.0 + 1e-9
        assert r["recording_best_us"] <= r["trials16_us"]
    s = summary(rows, trials=(4, 16))
    assert s["shapes"] == 3 and 0 < s["zero_trial_geomean"] <= 1 and 0 < s["trials4_geomean"] <= 1
    assert set(s) >= {"zero_trial_geomean", "trials4_geomean", "default_geomean"}


def test_geomean_skips_what_is_unknown():
    from autosched.benchmarks.transfer import geomean
    assert geomean([]) is None and geomean([None, 2.0, 8.0]) == pytest.approx(4.0)


def test_a_search_on_a_gpu_nobody_measured_starts_from_the_nearest_gpus_recordings(h100, strategy_context, tmp_path):
    """No recording of this GPU: the model-guided search's prior is the nearest GPU's recordings (the
    same chip before another model; among other models, the one with the most shapes)."""
    from autosched import tuner
    from autosched.database import Database
    from autosched.measure.recording import ReplayRunner
    far = dataclasses.replace(h100, name="GPU far", cc=(8, 0), sm_count=108)
    chip = dataclasses.replace(h100, name="NVIDIA H200")
    recs = {"far": [synthetic_recording(864, 288, far, seed=2), synthetic_recording(288, 768, far, seed=3)],
            "h100": [synthetic_recording(1536, 288, h100, seed=4)]}
    new = dataclasses.replace(h100, name="NVIDIA H200", driver_version="999.0")
    assert transfer.nearest_recordings(new, T.family, recs["far"] + recs["h100"]) == recs["h100"]   # the same chip
    other = dataclasses.replace(h100, name="GPU new", cc=(8, 6), sm_count=84)
    assert transfer.nearest_recordings(other, T.family, recs["far"] + recs["h100"]) == recs["far"]  # most shapes
    assert transfer.nearest_recordings(chip, T.family, []) == []
    held = synthetic_recording(288, 288, new, seed=1)
    seen = strategy_context
    with Database(tmp_path / "db") as db:
        res = tuner.tune(GemvQ4F16(288, 288), T, ReplayRunner(held), db, strategy="model", trials=8, batch=8,
                         recordings=recs["far"] + recs["h100"])
    assert len(seen["prior"]) == len(recs["h100"][0].entries) and res.trials == 8


def test_a_cross_gpu_row_learns_only_from_other_gpu_models(h100):
    """The transfer benchmark on a GPU with no recording of its own: the zero-trial pick comes from
    the model of the other GPU models' recordings, the searches from their nearest; a row as usual."""
    from autosched.benchmarks.transfer import evaluate
    from autosched.measure.recording import ReplayRunner
    new = dataclasses.replace(h100, name="GPU new", sm_count=100, cc=(8, 9))
    others = [synthetic_recording(n, k, h100, count=80, seed=i) for i, (n, k) in
              enumerate([(288, 288), (864, 288), (288, 768)])]
    held = synthetic_recording(576, 288, new, count=80, seed=9)
    configs = [c for c, _ in held.entries.values()]
    row = evaluate(GemvQ4F16(576, 288), T, ReplayRunner(held), others, configs, trials=(4, 16), across=True)
    assert row["zero_trial_config"] in configs and row["zero_trial_us"] is not None
    assert 0 < row["zero_trial_vs_16"] <= 1.0 + 1e-9 and row["trials16_ran"] == 16


def test_database_rows_of_another_gpu_model_train_the_model_of_others(h100, tmp_path):
    """No recording at all: the rows a tuning stored on another GPU model (its figures noted beside
    them) serve a GPU model nobody measured, the source naming that GPU."""
    from autosched.database import Database
    from autosched.identity import build_id
    from autosched.selection import Origin
    a = dataclasses.replace(h100, name="GPU A", sm_count=132)
    c = dataclasses.replace(h100, name="GPU C", sm_count=78, cc=(8, 6))
    with Database(tmp_path / "db") as db:
        db.note_device(a)
        for i, (n, k) in enumerate([(288, 288), (864, 288), (288, 768)]):
            for cfg, m in synthetic_recording(n, k, a, count=60, seed=i).entries.values():
                db.add(GemvQ4F16(n, k).key, a.key, T.family, cfg, m, build=build_id(T))
        samples, devices = transfer.across_gpus(T, c, recordings=[], db=db)
        assert [d.name for d in devices] == ["GPU A"] and len(samples) == 180
        [got] = rank(UNRECORDED, c, db, recordings=[])
    assert got.origin == Origin.OTHER_GPUS_PREDICTED and "GPU A" in got.source
    assert T.space(UNRECORDED, c).contains(got.config)


def test_a_recording_named_for_another_template_is_not_read(tmp_path):
    """Files named <template>-<shape>... are read only for their own template (each shipped name
    says what it holds); names of no such pattern are read to find out."""
    from autosched.measure.recording import load_shipped
    for path, rec in load_shipped():
        assert transfer.may_hold(path, rec.template), path.name
        assert not transfer.may_hold(path, "no_such_template"), path.name
    assert transfer.may_hold(tmp_path / "mine.json.gz", "gemv_q4f16")
    assert not transfer.may_hold(tmp_path / "hgemm_wgmma-4096x4096x4096.json.gz", "gemv_q4f16")
    assert transfer.may_hold(tmp_path / "gemv_q4f16-12288x4096-NVIDIA_H200.json.gz", "gemv_q4f16")
