"""The public Python API (autosched.api, re-exported by autosched) on this GPU-less machine: the
CLI is a thin layer over these, so what it decides is tested here."""

import pytest

import autosched
import autosched.device
from autosched.api import AutoschedError
from autosched.database import Database
from synthetic_recording import synthetic  # noqa: F401  (fixture)


@pytest.fixture
def replay_only(monkeypatch, synthetic):
    monkeypatch.setenv("AUTOSCHED_RECORDINGS", str(synthetic.dir))
    monkeypatch.setattr(autosched.device, "gpu_count", lambda: 0)   # even where a GPU exists


def test_package_exports_the_api():
    for name in ("tune", "record", "best_config", "export", "load_model", "workload", "convert", "devices"):
        assert callable(getattr(autosched, name)), name
        assert getattr(autosched, name).__doc__, f"{name} has no docstring"
    assert "tune" in dir(autosched)
    with pytest.raises(AttributeError):
        autosched.no_such_thing


def test_workload_parses_the_family_shape_syntax_and_names_bad_input():
    assert autosched.workload("gemv-q4f16", "12288x4096").key == "gemv_q4f16:N=12288,K=4096"
    assert autosched.workload("gemv_q4f16", "12288x4096").key == "gemv_q4f16:N=12288,K=4096"
    assert autosched.workload("sgemm", "8x16x32_ta").trans_a == 1
    with pytest.raises(AutoschedError, match="12288"):
        autosched.workload("gemv-q4f16", "12288")
    with pytest.raises(ValueError, match="unknown operator 'gemm'; available: gemv-q4f16, gemv-dense, sgemm, hgemm"):
        autosched.workload("gemm", "1x1x1")


def test_tune_replays_without_a_gpu_and_reports_plan_and_default(replay_only, synthetic, tmp_path):
    plans, seen = [], []
    w = autosched.workload("gemv-q4f16", "4096x4096")
    run = autosched.tune(w, db=tmp_path / "db", strategy="random", trials=60, on_start=plans.append,
                         on_result=lambda c, m, r: seen.append(c))
    (plan,) = plans
    assert "REPLAY" in plan.runner_note and plan.total == 60 and plan.templates == ["gemv_q4f16"]
    assert plan.space_size == len(synthetic.configs)
    assert len(seen) == 60 and run.result.measured_now == 60 and run.replayed
    assert run.default_config == synthetic.template.default_config(w, synthetic.device)
    assert run.default.source.startswith("replay")
    with Database(tmp_path / "db") as db:
        assert len(db.measured(w.key, synthetic.device.key, "gemv_q4f16")) == 60
        best = db.best(w.key, synthetic.device.key, "gemv_q4f16")
    assert best.measurement.median_us == run.result.best.median_us
    # an open Database is used as it is (and left open)
    with Database(tmp_path / "db") as db:
        again = autosched.tune(w, db=db, strategy="random", trials=60)
        assert again.result.resumed == 60 and db.conn is not None


def test_tune_refuses_an_unrecorded_shape_and_a_template_that_does_not_serve_it(replay_only, tmp_path):
    with pytest.raises(AutoschedError, match="no recording for gemv_q4f16:N=4096,K=8192"):
        autosched.tune(("gemv-q4f16", "4096x8192"), db=tmp_path / "db")
    with pytest.raises(AutoschedError, match="template 'sgemm' does not serve"):
        autosched.tune(("gemv-q4f16", "4096x4096"), db=tmp_path / "db", template="sgemm")
    with pytest.raises(AutoschedError, match="no CUDA GPU found on this machine: use the replay runner"):
        autosched.tune(("gemv-q4f16", "4096x4096"), db=tmp_path / "db", runner="gpu")
    with pytest.raises(AutoschedError, match="record.* on a GPU"):
        autosched.record(("gemv-q4f16", "4096x4096"), db=tmp_path / "db")


def test_best_config_follows_the_chain(replay_only, synthetic, tmp_path):
    w = synthetic.workload
    rec = synthetic.load()
    # nothing in the database: the recording taken on the same device
    got = autosched.best_config(w, device=synthetic.device, db=tmp_path / "db")
    assert got.config == rec.best()[0] and got.template == "gemv_q4f16" and got.source.startswith("recording")
    # the same GPU model under another driver: the recording serves as a sibling's, and says so
    import dataclasses

    from autosched.selection import SIBLING
    other = dataclasses.replace(synthetic.device, driver_version="1.0")
    got = autosched.best_config(w, device=other, db=tmp_path / "db")
    assert got.config == rec.best()[0] and SIBLING in got.source
    # another architecture: its numbers are not served as measured; a model of the other GPU models'
    # recordings predicts, and says so
    other = dataclasses.replace(synthetic.device, name="NVIDIA L40S", cc=(8, 9), sm_count=142)
    got = autosched.best_config(w, device=other, db=tmp_path / "db")
    assert got.source.startswith("predicted") and "other GPU models" in got.source and "untuned" in got.source
    assert synthetic.template.space(w, other).contains(got.config)


def test_load_model(tmp_path):
    from autosched.models.llama2c import SEED_CONFIGS, LlamaConfig, random_weights, write_checkpoint
    cfg, w, tok = autosched.load_model("random:stories15M")
    assert cfg == SEED_CONFIGS["stories15M"] and w["wq"].shape == (6, 288, 288) and tok is None
    small = LlamaConfig(64, 96, 1, 4, 4, 40, 8)
    write_checkpoint(tmp_path / "m.bin", small, random_weights(small, 1))
    cfg, w, src = autosched.load_model(str(tmp_path / "m.bin"))
    assert cfg == small and src == tmp_path / "m.bin"
    with pytest.raises(AutoschedError, match="unknown random model"):
        autosched.load_model("random:gpt5")
    with pytest.raises(AutoschedError, match="does not exist"):
        autosched.load_model(str(tmp_path / "nope.bin"))


def test_convert_never_writes_over_its_input_and_asks_before_overwriting(tmp_path):
    from autosched.models.llama2c import LlamaConfig, random_weights, write_checkpoint
    small = LlamaConfig(64, 96, 1, 4, 4, 40, 8)
    src = tmp_path / "m.bin"
    write_checkpoint(src, small, random_weights(small, 1))
    before = src.read_bytes()
    autosched.convert(src, tmp_path / "hf")
    hf_weights = (tmp_path / "hf" / "model.safetensors").read_bytes()
    with pytest.raises(AutoschedError, match="inside it"):
        autosched.convert(tmp_path / "hf", tmp_path / "hf" / "model.safetensors", force=True)
    assert (tmp_path / "hf" / "model.safetensors").read_bytes() == hf_weights
    with pytest.raises(AutoschedError, match="exists: pass force"):
        autosched.convert(tmp_path / "hf", src)
    assert src.read_bytes() == before
    cfg, kind = autosched.convert(tmp_path / "hf", tmp_path / "back.bin")
    assert kind == "llama2.c checkpoint" and (tmp_path / "back.bin").read_bytes() == before
    autosched.convert(tmp_path / "hf", tmp_path / "back.bin", force=True)


def test_replay_with_build_compiles_every_config_it_answers_for(replay_only, synthetic, tmp_path, monkeypatch):
    """tune --runner replay --build: NVRTC compiles each config the replay answers for (it compiled
    nothing before, though its help said it did)."""
    monkeypatch.setenv("AUTOSCHED_CACHE", str(tmp_path / "cache"))
    run = autosched.tune(synthetic.workload, runner="replay", db=tmp_path / "db", strategy="random", trials=4,
                         build=True, jobs=2)
    assert run.result.measured_now == 4
    built = [p for p in (tmp_path / "cache").rglob("*") if p.is_file()]
    assert len(built) >= 4, built


def test_workload_takes_the_family_options():
    assert autosched.workload("hgemm", "64x14336x4096", layout="nt") == autosched.workload("hgemm", "64x14336x4096_bt")
    w = autosched.workload("hgemm", "4096x4096x4096", layout="tn", dtype="bf16")
    assert w.key == "hgemm:M=4096,N=4096,K=4096,b_col=0,a_col=1,bf16=1" and w.shape_str == "4096x4096x4096_tn_bf16"
    assert autosched.workload("hgemm", "8x8x8", layout=None, dtype=None) == autosched.workload("hgemm", "8x8x8")
    with pytest.raises(AutoschedError, match="sgemm takes no option --layout; --layout is for hgemm"):
        autosched.workload("sgemm", "8x8x8", layout="nt")
    with pytest.raises(AutoschedError, match="--dtype must be one of fp16, bf16, got 'fp8'"):
        autosched.workload("hgemm", "8x8x8", dtype="fp8")


def test_tune_says_no_template_serves_a_layout(replay_only, tmp_path, monkeypatch):
    import dataclasses

    from autosched import registry
    h = registry.FAMILIES["hgemm"]
    monkeypatch.setitem(registry.FAMILIES, "hgemm", dataclasses.replace(h, templates=h.templates[:1]))
    with pytest.raises(ValueError, match=r"no template of hgemm accepts .*blocked=1.*hgemm_mma: its kernel reads row "
                                         r"layouts"):
        autosched.tune(("hgemm", "4096x4096x4096_bb"), db=tmp_path / "db")
    assert not (tmp_path / "db").exists()


def test_tune_measures_the_default_this_gpu_is_served_not_the_first_templates(monkeypatch, tmp_path):
    """hgemm on the (recorded) H100: the default beside the tuned result is hgemm_wgmma's, which
    selection serves an untuned shape there, not hgemm_mma's (the family's first, 3x slower)."""
    from autosched.selection import default_candidate
    monkeypatch.setattr(autosched.device, "gpu_count", lambda: 0)
    w = autosched.workload("hgemm", "4096x4096x4096")
    run = autosched.tune(w, db=tmp_path / "db", strategy="random", trials=8)
    want = default_candidate(w, run.plan.device)
    assert run.default_template == want.template == "hgemm_wgmma" and run.default_config == want.config
    assert run.default.ok and run.default.median_us < 2 * run.result.best.median_us


def test_a_template_without_a_recording_of_a_recorded_shape_is_told_which_have_one(monkeypatch, tmp_path):
    """Replaying one template of a shape whose recordings are of other templates: the error names
    those (what would replay), not every shipped file."""
    from autosched.api import recordings_for
    from autosched.registry import templates_for
    monkeypatch.setattr(autosched.device, "gpu_count", lambda: 0)
    w = autosched.workload("hgemm", "128x4096x4096_bt")
    have = [r.template for r in recordings_for(w)]
    missing = [t.family for t in templates_for(w) if t.family not in have]
    if not have or not missing:
        pytest.skip("every template of the shape has a recording now, or none has")
    with pytest.raises(AutoschedError) as e:
        autosched.tune(w, db=tmp_path / "db", template=missing[0], trials=1)
    msg = str(e.value)
    assert f"no recording of {missing[0]} for {w.key}" in msg and all(t in msg for t in have)
    assert ".json.gz" not in msg
