"""tune-model: the decode step's kernels, the budget split, the replay run, and what the engine
tells a user about untuned shapes (engine/plan.py, model_tuning.py, model_tuning.tune_model, the CLI)."""

import math

import pytest

from autosched import api, model_tuning
from autosched.cli import main
from autosched.engine.engine import matmul_shapes, untuned_matmuls, untuned_note
from autosched.engine.plan import step_kernels, step_plan
from autosched.models.llama2c import SEED_CONFIGS, random_weights, read_header, write_checkpoint
from autosched.selection import Candidate, Origin

L32 = SEED_CONFIGS["llama3.2-1b"]


@pytest.fixture(autouse=True)
def own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("AUTOSCHED_CACHE", str(tmp_path / "cache"))


def test_the_presets_have_the_public_shapes():
    c = SEED_CONFIGS["llama3.2-1b"]
    assert (c.dim, c.n_layers, c.n_heads, c.n_kv_heads, c.hidden_dim, c.vocab_size) == (2048, 16, 32, 8, 8192, 128256)
    assert c.shared_classifier and c.rope_theta == 500000.0 and round(c.n_params() / 1e9, 2) == 1.24
    t = SEED_CONFIGS["tinyllama-1.1b"]
    assert (t.n_kv_heads, t.hidden_dim, t.n_layers) == (4, 5632, 22) and round(t.n_params() / 1e9, 1) == 1.1


def test_the_plan_enumerates_every_matmul_shape_the_engine_launches():
    plan = step_plan(L32, ["q4f16_1"], budget_s=600)
    got = {s.workload.key: s.names for s in plan.shapes}
    assert got == {f"gemv_q4f16:N={n},K={k}": [name] for name, (n, k) in matmul_shapes(L32).items()}
    assert (3072, 2048) in matmul_shapes(L32).values()     # qkv of a GQA model: 2048 + 2 * 8 * 64 rows
    assert math.isclose(sum(s.budget_s for s in plan.shapes), 600)
    assert [s.share for s in plan.shapes] == sorted((s.share for s in plan.shapes), reverse=True)
    ks = plan.kernels["q4f16_1"]
    assert math.isclose(sum(k.share for k in ks), 1.0)
    assert {k.name for k in ks} == {"qkv", "o", "gate_up", "down", "cls", "attention", "embed", "argmax"}
    assert all(k.why_not for k in ks if not k.tunable)
    assert {k.name: k.epilogue for k in ks if k.tunable}["gate_up"] == "norm_swiglu"


def test_a_budget_over_several_formats_still_sums_and_dense_formats_say_why():
    plan = step_plan(SEED_CONFIGS["stories15M"], ["q4f16_1", "fp16"], budget_s=90)
    assert math.isclose(sum(s.budget_s for s in plan.shapes), 90)
    assert {s.fmt for s in plan.shapes} == {"q4f16_1", "fp16"}      # fp16: the gemv-dense family
    fp16 = step_kernels(SEED_CONFIGS["stories15M"], "fp16")
    assert all(k.tunable for k in fp16 if k.shape) and all("no search space" in k.why_not for k in fp16 if not k.shape)
    int8 = step_kernels(SEED_CONFIGS["stories15M"], "int8")
    assert not any(k.tunable for k in int8) and all("no search space" in k.why_not for k in int8)
    assert step_plan(SEED_CONFIGS["stories15M"], ["int8"], 60).shapes == []


def test_shapes_two_matmuls_share_are_tuned_once():
    from autosched.models.llama2c import LlamaConfig
    cfg = LlamaConfig(512, 512, 2, 8, 8, 2048, 64)     # o is 512x512, and so is down
    plan = step_plan(cfg, ["q4f16_1"], 60)
    [shared] = [s for s in plan.shapes if s.workload.key == "gemv_q4f16:N=512,K=512"]
    assert sorted(shared.names) == ["down", "o"] and len(plan.shapes) == 4


def test_tune_model_replays_the_recorded_shapes(tmp_path):
    run = model_tuning.tune_model("random:stories15M", budget_min=0.05, db=tmp_path / "db", runner="replay")
    assert run.runner == "replay" and len(run.rows) == 5
    for r in run.rows:
        assert r.status == "tuned" and r.trials > 0 and r.source.startswith("replay of")
        assert r.best_us > 0 and r.default_us >= r.best_us
    # every measurement is stored (under the recording's build: a replay's rows rank nothing)
    from autosched.database import Database
    device = api.target_device(run.rows[0].shape.workload)
    with Database(tmp_path / "db") as db:
        stored = {tuple(sorted(p.items())) for _, p, _ in db.samples(device.key, "gemv_q4f16")}
    assert stored == {tuple(sorted(r.shape.workload.params.items())) for r in run.rows}


def test_tune_model_in_replay_reports_the_shapes_no_recording_holds(tmp_path):
    done = []
    run = model_tuning.tune_model("random:llama3.2-1b", budget_min=0.05, db=tmp_path / "db", runner="replay",
                         on_done=done.append)
    assert len(done) == 5 and all(r.status == "not recorded" for r in run.rows)
    assert all(r.source == "served predicted" and "GPU" in r.note for r in run.rows)


@pytest.mark.parametrize("kw, needle", [
    ({"model": "random:nope"}, "'nope'"),
    ({"model": "/no/such/model.bin"}, "/no/such/model.bin"),
    ({"formats": ["q5"]}, "'q5'"),
    ({"budget_min": 0}, "budget"),
    ({"runner": "ray"}, "'ray'"),
])
def test_bad_input_is_refused_naming_it(kw, needle):
    args = {"model": "random:stories15M", **kw}
    with pytest.raises(api.AutoschedError, match=needle.replace("/", ".").replace("(", ".")):
        model_tuning.tune_model(args.pop("model"), **args)


def test_the_cli(capsys):
    with pytest.raises(SystemExit) as e:
        main(["tune-model", "--help"])
    out = capsys.readouterr().out
    assert e.value.code == 0 and "--budget" in out and "--formats" in out and "random:" in out
    assert main(["tune-model", "random:stories15M", "--formats", "q5"]) == 2
    assert "'q5'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["tune-model", "random:stories15M", "--budget", "-1"])
    assert "minutes above 0" in capsys.readouterr().err


def test_model_config_reads_no_weights(tmp_path):
    from autosched.models.hf import write_hf
    from autosched.models.llama2c import LlamaConfig
    cfg = LlamaConfig(64, 128, 2, 4, 2, 96, 32, shared_classifier=False)
    w = random_weights(cfg, 0)
    write_checkpoint(tmp_path / "m.bin", cfg, w)
    write_hf(tmp_path / "hf", cfg, w)
    assert read_header(tmp_path / "m.bin") == cfg == api.model_config(str(tmp_path / "m.bin"))
    assert api.model_config(str(tmp_path / "hf")) == cfg
    assert api.model_config("random:llama3.2-1b") is L32


def test_the_engine_names_untuned_shapes_and_the_command():
    shapes = matmul_shapes(L32)
    # untuned is the origin (data), not the text: a re-timed candidate keeps its origin
    choices = {"qkv": Candidate("gemv_q4f16", {}, "database, fastest of 4 in a CUDA graph (9 us)", 9.0, Origin.DATABASE),
               "o": Candidate("gemv_q4f16", {}, "predicted (cost model ...), fastest of 4 in a CUDA graph", 8.0,
                              Origin.PREDICTED),
               "gate_up": Candidate("gemv_q4f16", {}, "default (no measured config pairs rows)", None, Origin.DEFAULT),
               "down": Candidate("gemv_q4f16", {}, "recording x.json.gz", 7.0, Origin.RECORDING), "cls": None}
    names = untuned_matmuls(choices, shapes)
    assert names == ["o 2048x2048", "gate_up 16384x2048"]
    note = untuned_note(names, "random:llama3.2-1b", "q4f16_1")
    assert "o 2048x2048" in note and "`autosched tune-model random:llama3.2-1b --formats q4f16_1`" in note
    assert untuned_note([], "m", "q4f16_1") == ""


def test_a_gpu_run_tunes_every_shape_through_one_runner_and_one_build_pool(tmp_path, monkeypatch):
    """On the GPU the runner and the build pool are opened once for the whole model (each shape's own
    pair cost seconds of its share), handed to every shape's api.tune, and closed at the end."""
    from autosched import model_tuning
    from autosched.build import Builder
    opened, closed, seen = [], [], []

    class OpenRunner:
        name = "gpu"

        def close(self):
            closed.append(self)

    def open_runner(kind, w=None, templates=None, screen=None, cluster=None, gpus=None):
        opened.append((kind, gpus))
        return OpenRunner(), "note"

    def tune(w, *, runner, builder, gpus, **kw):
        seen.append((runner, builder, gpus))
        raise api.AutoschedError("measured nothing here")
    monkeypatch.setattr(api, "open_runner", open_runner)
    monkeypatch.setattr(api, "tune", tune)
    monkeypatch.setattr(Builder, "start", lambda self: self)      # no NVRTC processes for a stand-in
    out = model_tuning.tune_model_config("m", L32, ["q4f16_1"], 10.0, runner="gpu", db=tmp_path / "db", gpus=[1],
                                  verify=False)
    assert opened == [("gpu", [1])] and len(closed) == 1 and len(out.rows) == len(seen) == 5
    assert all(r is closed[0] and isinstance(b, Builder) and b is seen[0][1] and g is None for r, b, g in seen)
    assert all(row.status == "failed" and "measured nothing" in row.note for row in out.rows)


def test_api_tune_leaves_an_open_runner_open_and_refuses_gpus_beside_it(tmp_path):
    from autosched.measure.recording import Recording, ReplayRunner, shipped_recordings

    class Kept(ReplayRunner):
        closes = 0

        def close(self):
            Kept.closes += 1
    rec = Recording.load(next(p for p in shipped_recordings() if p.name.startswith("gemv_q4f16-4096x4096-")))
    run = Kept([rec])
    for seed in (0, 1):
        t = api.tune(("gemv-q4f16", "4096x4096"), runner=run, db=tmp_path / "db", trials=6, seed=seed)
        assert t.result.best is not None and t.plan.runner_note == "measuring on the replay runner"
    assert Kept.closes == 0
    with pytest.raises(api.AutoschedError, match="open runner already has its GPUs"):
        api.tune(("gemv-q4f16", "4096x4096"), runner=run, db=tmp_path / "db", gpus=[0])
