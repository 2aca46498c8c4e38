"""autosched.dynamic (DietCode) on the CPU: the symbolic workload, jointly sampled sketches, the
hgemm_dyn template (both local-padding variants compile with NVRTC), the probes, the cost model,
the whole tuning run on the synthetic runner, and the decision tree exported as Python and as C++
(compiled by the host compiler and checked against the Python dispatcher on every M)."""

from __future__ import annotations

import json
import random
import shutil
import subprocess

import numpy as np
import pytest

import autosched
import autosched.device
from autosched.api import AutoschedError
from autosched.cli import main
from autosched.database import Database
from autosched.dynamic import sketch
from autosched.dynamic.cost_model import MicroKernelCostModel, wave_model_us
from autosched.dynamic.dispatch import Dispatcher, c_dispatch_source, fit_tree, tree_nodes, walk
from autosched.dynamic.export import export_cu, load_result, save_result
from autosched.dynamic.measurer import measure_micro_kernels, probe_shape, probe_workloads
from autosched.dynamic.synthetic import SyntheticRunner
from autosched.dynamic.tune import DynamicResult, select, tune_dynamic
from autosched.dynamic.workload import DynamicWorkload, default_instances
from autosched.templates.gemm_tiles import threads
from autosched.templates.hgemm_dyn import HgemmDynTemplate, micro_kernel_space, unroll
from autosched.templates.hgemm_mma import registers_needed, smem_bytes
from autosched.workloads.base import WorkloadError
from autosched.templates import hgemm_dyn as t_dyn


@pytest.fixture(scope="module")
def dw():
    return DynamicWorkload.parse("hgemm", "Mx4096x4096_bt", (1, 4096))


@pytest.fixture(scope="module")
def tuned(h100, dw, tmp_path_factory):
    db = Database(tmp_path_factory.mktemp("dyn") / "a.db")
    runner = SyntheticRunner(h100)
    res = tune_dynamic(dw, HgemmDynTemplate(), runner, db, rounds=3, per_round=10, seed=1)
    return res, db, runner


# -- frontend ---------------------------------------------------------------------------------------

def test_workload_defaults_and_bert(dw):
    assert dw.key == "hgemm:M=1..4096,N=4096,K=4096,b_col=1"
    assert dw.at(100).M == 100 and dw.at(100).b_col == 1
    assert {1, 4096, 64, 1024} <= set(dw.instances) and any(m % 2 for m in dw.instances if m > 1)
    assert abs(sum(dw.weights) - 1) < 1e-12
    bert = DynamicWorkload.parse("hgemm", "Mx3072x768_bt", (16, 2048), step=16)
    assert all(m % 16 == 0 for m in bert.instances) and bert.ms()[:2] == [16, 32] and len(bert.ms()) == 128
    custom = DynamicWorkload.parse("hgemm", "Mx768x768_bt", "1:128", instances=[128, 5], weights=[3, 1])
    assert custom.instances == (5, 128) and custom.weights == (0.25, 0.75)
    assert DynamicWorkload.from_json(json.loads(json.dumps(custom.to_json()))) == custom
    assert default_instances(16, 2048, 16)[0] == 16


@pytest.mark.parametrize("kw, words", [
    (dict(shape="4096x4096x4096_bt", m_range=(1, 9)), "symbolic M"),
    (dict(shape="Mx4096x4096_bt", m_range="9:1"), "lo <= hi"),
    (dict(shape="Mx4096x4096_bt", m_range="a:b"), "LO:HI"),
    (dict(shape="Mx4096x4096_bt", m_range=(1, 64), instances=[100]), "instances [100]"),
    (dict(shape="Mx4096x4096_bt", m_range=(1, 64), instances=[1, 2], weights=[1]), "1 weights for 2"),
    (dict(shape="Mx4096x4096_bt", m_range=(16, 64), step=16, instances=[17]), "step 16"),
    (dict(shape="Mx4096x4095_bt", m_range=(1, 64)), "K=4095"),
])
def test_workload_errors_name_the_input(kw, words):
    with pytest.raises(WorkloadError, match=words.replace("[", r"\[").replace("]", r"\]")):
        DynamicWorkload.parse("hgemm", **kw)
    with pytest.raises(AutoschedError):
        autosched.dynamic_workload("hgemm", kw["shape"], kw["m_range"], kw.get("instances"), kw.get("weights"),
                                   kw.get("step", 1))


# -- sketches ---------------------------------------------------------------------------------------

def test_sketches_are_joint_and_within_the_target(h100):
    space = micro_kernel_space(4096, 1, h100)
    rng = random.Random(3)
    cfgs = [t_dyn.sample(space, (4096, 4096), rng) for _ in range(300)]
    for c in cfgs:
        t = threads(c["bm"], c["bn"], c["wm"], c["wn"])
        assert 64 <= t <= h100.max_threads_per_block
        assert registers_needed(c["wm"], c["wn"]) * t <= h100.regs_per_block
        assert smem_bytes(c["bm"], c["bn"], c["bk"], c["stages"], c["pad"], 1) <= h100.smem_per_block_optin
        assert (2 * c["bk"]) % 16 == 0 and (2 * c["bn"]) % 16 == 0            # 16-byte vectors
        d = t_dyn.decision(c)
        assert unroll(c) == d["mt"] * 2 * d["nt"] * d["ks"]                    # never sampled alone
        assert t_dyn.config_of(d) == c
    # tiles from the maximum extents, not divisors of one shape
    assert any(c["bm"] & (c["bm"] - 1) for c in cfgs) and any(c["bn"] & (c["bn"] - 1) for c in cfgs)
    assert len({(c["bm"], c["bn"]) for c in cfgs}) > 30
    # a small largest extent caps the block
    small = [t_dyn.sample(space, (40, 4096), rng) for _ in range(50)]
    assert all(c["bm"] <= 48 for c in small)


def test_mutation_keeps_thread_tiles_and_unroll_consistent(h100):
    space = micro_kernel_space(4096, 1, h100)
    rng = random.Random(5)
    changed = 0
    for _ in range(200):
        c = t_dyn.sample(space, (4096, 4096), rng)
        m = t_dyn.mutate(space, c, rng, (4096, 4096))
        if m is None:
            continue
        changed += 1
        assert space.contains(m) and m != c
        dc, dm = t_dyn.decision(c), t_dyn.decision(m)
        assert (dc["warps_m"], dc["warps_n"]) == (dm["warps_m"], dm["warps_n"])
        assert unroll(m) == dm["mt"] * 2 * dm["nt"] * dm["ks"]
    assert changed > 150


# -- template -----------------------------------------------------------------------------------------

def test_template_render_and_both_paddings_compile(h100):
    pytest.importorskip("cuda.core")
    from autosched.build import compile_spec
    t = HgemmDynTemplate()
    w = DynamicWorkload.parse("hgemm", "Mx4096x4096_bt", (1, 4096)).at(100)
    regs = {}
    for lp in (1, 0):
        cfg = {"bm": 96, "bn": 128, "wm": 48, "wn": 64, "bk": 32, "stages": 3, "pad": 8, "local_pad": lp}
        spec = t.render(w, cfg, h100)
        assert spec.name_expression == f"hgemm_dyn<1, 96, 128, 32, 48, 64, 3, 8, {lp}, {3 * 8 * 2}>"
        assert spec.grid == (32, 2, 1) and spec.block == (128, 1, 1)
        b = compile_spec(spec)
        assert b.ok, b.error
        regs[lp] = b.resources.registers
    assert regs[0] != regs[1]           # the guarded variant is a different program
    # a row-major B, non-power-of-two slice
    w2 = DynamicWorkload.parse("hgemm", "Mx4096x4096", (1, 4096)).at(7)
    b = compile_spec(t.render(w2, {"bm": 64, "bn": 64, "wm": 32, "wn": 32, "bk": 48, "stages": 2, "pad": 0,
                                   "local_pad": 0}, h100))
    assert b.ok, b.error
    assert t.refuses(DynamicWorkload.parse("hgemm", "Mx4096x4096_bt_bf16", (1, 64)).largest)


# -- measurer and cost model ------------------------------------------------------------------------

def test_probe_shapes_have_exactly_the_grid(h100, dw):
    for cfg in ({"bm": 128, "bn": 128}, {"bm": 96, "bn": 80}, {"bm": 16, "bn": 256}):
        for g in (132, 264, 396):
            m, n = probe_shape(cfg, g, 4096)
            assert (m // cfg["bm"]) * (n // cfg["bn"]) == g and n <= -(-4096 // cfg["bn"]) * cfg["bn"]


def test_probes_resume_from_the_database(h100, dw, tmp_path):
    t = HgemmDynTemplate()
    space = micro_kernel_space(dw.N, 1, h100)
    rng = random.Random(0)
    cfgs = [t_dyn.sample(space, (dw.hi, dw.N), rng) for _ in range(5)]
    runner = SyntheticRunner(h100)
    with Database(tmp_path / "p.db") as db:
        mks = measure_micro_kernels(t, cfgs, dw, runner, db)
        first = runner.calls
        assert first == sum(len(probe_workloads(m.config, m.report, dw, h100)) for m in mks)
        for mk in mks:
            assert mk.ok and mk.report.blocks_per_sm >= 1 and mk.report.source == "estimate"
            assert set(mk.probes) == {132, 132 * mk.report.blocks_per_sm}
        again = measure_micro_kernels(t, cfgs, dw, runner, db)
        assert runner.calls == first and [m.probes for m in again] == [m.probes for m in mks]


def test_wave_model_reproduces_its_probes():
    assert wave_model_us(10.0, 16.0, 2, 132, 132) == 10.0
    assert wave_model_us(10.0, 16.0, 2, 132, 264) == 16.0
    assert wave_model_us(10.0, 16.0, 2, 132, 265) == 26.0          # a second wave of one block an SM
    assert wave_model_us(10.0, 16.0, 2, 132, 1) == 10.0
    assert wave_model_us(10.0, 10.0, 1, 132, 133) == 20.0


def test_cost_model_matrix_and_correction(h100, tuned):
    res, _, runner = tuned
    model = MicroKernelCostModel(res.workload, h100)
    Ms = [1, 7, 100, 1000, 4000]
    P = model.throughput(res.kernels, Ms)
    assert P.shape == (len(res.kernels), len(Ms)) and np.all(P > 0)
    t = HgemmDynTemplate()
    obs = [(k, M, runner.measure(t.render(res.workload.at(M), k.config, h100)).median_us)
           for k in res.kernels for M in range(3, 4096, 97)]
    before = np.mean([abs(np.log(model.predict_us([k], [M])[0, 0] / us)) for k, M, us in obs])
    model.fit(obs)
    after = np.mean([abs(np.log(model.predict_us([k], [M])[0, 0] / us)) for k, M, us in obs])
    assert after < before


def test_the_batched_queries_answer_as_the_single_ones(h100, dw):
    """What the search's speed-up rests on: guess_many equals guess config by config (before any fit,
    the roofline prior; after, the fitted models), and analytic_us_many equals analytic_us at every M,
    row probe included; the wave model over an array equals it element by element."""
    from autosched.benchmarks.dynamic import micro_kernel_templates
    from autosched.dynamic.cost_model import ProbeModel, wave_model_us_many
    templates = micro_kernel_templates(h100, True)
    spaces = {t.family: t.space(dw.largest, h100) for t in templates}
    rng = random.Random(5)
    pairs = [sketch.sample_any(spaces, (dw.hi, dw.N), rng) for _ in range(60)]
    pm, model = ProbeModel(dw, h100, templates), MicroKernelCostModel(dw, h100)
    by = {t.family: t for t in templates}
    Ms = [1, 2, 63, 64, 65, 130, 1000, 4096]
    for fitted in (False, True):
        if fitted:
            measured = []
            for fam in by:
                measured += measure_micro_kernels(by[fam], [c for f, c in pairs[:40] if f == fam], dw,
                                                  SyntheticRunner(h100), row_probe=True)
            pm.fit(measured)
            assert pm._models, "some family has enough measurements to fit"
            for mk in measured:
                assert np.array_equal(model.analytic_us_many(mk, Ms), [model.analytic_us(mk, M) for M in Ms])
        many = pm.guess_many(pairs)
        for (f, c), g in zip(pairs, many):
            one = pm.guess(c, f)
            assert (g.family, g.config, g.probes, g.report) == (one.family, one.config, one.probes, one.report)
    T = np.array([0, 1, 131, 132, 133, 264, 265, 1000])
    assert list(wave_model_us_many(10.0, 16.0, 2, 132, T)) == [wave_model_us(10.0, 16.0, 2, 132, int(t)) for t in T]


def test_select_is_greedy_and_stops():
    P = np.array([[10, 1, 1], [1, 10, 1], [5, 5, 5], [9.9, 9.9, 1]])
    assert select(P, [1 / 3] * 3, 4)[:2] == [3, 2]
    assert select(P, [1 / 3] * 3, 1) == [3]
    assert select(P, [1 / 3] * 3, 4, min_gain=0.01) == [3, 2]     # kernel 0 adds 0.3%: not worth a kernel


# -- the whole run -----------------------------------------------------------------------------------

def test_tune_dynamic_end_to_end(h100, dw, tuned, tmp_path):
    res, db, runner = tuned
    # 3 rounds of 10 sampled micro-kernels, and the mma ladder's 3 rungs as seeds
    assert 1 <= len(res.kernels) <= 6 and res.seeds == 3 and res.measured == 30 + 3
    assert res.history[0]["seeds"] == 3 and res.to_json()["seeds"] == 3
    assert [v["M"] for v in res.verification] == list(dw.instances)
    for v in res.verification:
        assert v["status"] == "ok" and v["measured_us"] > 0
        assert v["flagged"] == (abs(v["error"]) > 0.10)
    # the verification rows are in the database under the instances' own keys
    assert db.measured(dw.at(dw.instances[3]).key, h100.key, "hgemm_dyn")
    # dispatched speed on M not tuned on: close to the best measured micro-kernel on each
    t = HgemmDynTemplate()
    good = list({json.dumps(k.config, sort_keys=True): k for k in res.kernels}.values())
    for M in (3, 33, 100, 300, 777, 1500, 3000):
        got = runner.measure(res.dispatcher.spec(dw.at(M), t, h100)).median_us
        best = min(runner.measure(t.render(dw.at(M), k.config, h100)).median_us for k in good)
        assert got <= 1.15 * best, M
    # JSON round trip through the artifact
    p = save_result(res, tmp_path / "x.db")
    back = load_result(tmp_path / "x.db", dw.key, h100.key)
    assert p.exists() and isinstance(back, DynamicResult)
    assert all(back.dispatcher(M) == res.dispatcher(M) for M in range(1, 4097))
    assert back.verification == res.verification


def test_flagged_predictions_are_reported(h100):
    insts = (3, 100, 2000)

    class Slow(SyntheticRunner):
        """Probes as modelled, real instances 30% slower: every verification must flag."""
        def measure(self, spec, binary=None):
            m = super().measure(spec, binary)
            if dict((a.name, a.value) for a in spec.args)["M"] in insts:
                m.median_us *= 1.3
            return m
    small = DynamicWorkload.parse("hgemm", "Mx4096x4096_bt", (1, 4096), instances=insts)
    res = tune_dynamic(small, HgemmDynTemplate(), Slow(h100), None, rounds=1, per_round=6)
    assert len(res.flagged) == 3


def test_an_instance_its_kernel_fails_is_measured_with_the_next_and_served_by_the_faster(h100, tmp_path):
    """The first kernel measured at M = 100 (the verification's pick) runs 1.6x its model there: the
    instance is measured again with the kernel the corrected model ranks next, served by it (the tree
    follows), and its verification row keeps the first kernel's figures under "replaced"."""
    from autosched.database import Database
    insts, target = (3, 100, 2000), 100

    class SlowOnce(SyntheticRunner):
        seen = 0

        def measure(self, spec, binary=None):
            m = super().measure(spec, binary)
            if dict((a.name, a.value) for a in spec.args)["M"] == target:
                SlowOnce.seen += 1
                if SlowOnce.seen == 1:
                    m.median_us *= 1.6
            return m
    small = DynamicWorkload.parse("hgemm", "Mx4096x4096_bt", (1, 4096), instances=insts)
    with Database(tmp_path / "db") as db:
        res = tune_dynamic(small, HgemmDynTemplate(), SlowOnce(h100), db, rounds=1, per_round=6)
        rows = db.measured(small.at(target).key, h100.key, "hgemm_dyn")
    assert len(res.kernels) >= 2
    v = next(v for v in res.verification if v["M"] == target)
    assert SlowOnce.seen == 2 and "replaced" in v, v
    assert v["kernel"] != v["replaced"]["kernel"] and v["measured_us"] < v["replaced"]["measured_us"]
    assert res.dispatcher(target) == v["kernel"]
    assert len(rows) == 2                   # both measurements of the instance are kept
    assert all("replaced" not in w for w in res.verification if w["M"] != target)


# -- dispatch ----------------------------------------------------------------------------------------

def test_dispatcher_table_agrees_with_the_tree():
    rng = np.random.default_rng(0)
    ms = np.arange(1, 2049)
    labels = np.digitize(ms, [70, 300, 301, 900, 1500]) % 3
    labels[rng.integers(0, len(ms), 40)] = 3
    tree = fit_tree(ms, labels, max_leaf_nodes=12)
    nodes = tree_nodes(tree)
    d = Dispatcher(nodes, [{}] * 4, 1, 2048)
    pred = tree.predict(ms.reshape(-1, 1))
    assert all(d(int(m)) == walk(nodes, int(m)) == p for m, p in zip(ms, pred))
    assert d.bounds == sorted(d.bounds) and len(d.labels) == len(d.bounds) + 1


def _compile_host(src: str, tmp_path):
    cxx = shutil.which("c++") or shutil.which("g++") or shutil.which("clang++")
    if cxx is None:
        pytest.skip("no C++ compiler")
    exe = tmp_path / "dispatch"
    subprocess.run([cxx, "-x", "c++", "-std=c++17", "-Wall", "-Werror", "-o", str(exe), str(src)], check=True,
                   capture_output=True, text=True)
    return exe


def test_exported_cu_host_part_agrees_with_python(h100, dw, tuned, tmp_path):
    res, _, _ = tuned
    cu = export_cu(res, tmp_path / "qkv.cu", h100)
    text = cu.read_text()
    assert text.count("hgemm_dyn<") >= len(res.kernels) and "#ifdef __CUDACC__" in text
    for k in res.kernels:
        assert f"{k.config['bm'] - 1}) / {k.config['bm']}" in text
    name = "autosched_hgemm_dyn_4096x4096_nt_dispatch"
    main_cc = tmp_path / "main.cc"
    main_cc.write_text(f'#include "{cu}"\n#include <cstdio>\n'
                       f'int main() {{ for (int m = {dw.lo}; m <= {dw.hi}; ++m) std::printf("%d\\n", {name}(m)); }}\n')
    exe = _compile_host(main_cc, tmp_path)
    got = [int(x) for x in subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout.split()]
    assert got == [res.dispatcher(m) for m in range(dw.lo, dw.hi + 1)]


def test_c_dispatch_of_a_single_leaf(tmp_path):
    src = tmp_path / "one.cc"
    src.write_text(c_dispatch_source([{"kernel": 0}], "f") + "int main() { return f(5); }\n")
    exe = _compile_host(src, tmp_path)
    assert subprocess.run([str(exe)]).returncode == 0


# -- command line ------------------------------------------------------------------------------------

@pytest.fixture
def cli(monkeypatch, capsys, tmp_path):
    monkeypatch.setenv("COLUMNS", "250")
    monkeypatch.setattr(autosched.device, "gpu_count", lambda: 0)

    def run(*argv):
        rc = main(list(argv))
        out, err = capsys.readouterr()
        return rc, " ".join(out.split()), " ".join(err.split())
    return run


def test_cli_help(cli):
    with pytest.raises(SystemExit) as e:
        cli("tune-dynamic", "--help")
    assert e.value.code == 0


@pytest.mark.parametrize("argv, words", [
    (["--shape", "Mx4096x4096_bt", "--range", "1:x"], "range must be LO:HI"),
    (["--shape", "Mx4096x4096_bt", "--range", "1:64", "--instances", "1,x"], "--instances"),
    (["--shape", "Mx4096x4096_bt", "--range", "1:64", "--instances", "1,100"], "instances [100]"),
    (["--shape", "64x4096x4096_bt", "--range", "1:64"], "symbolic M"),
    (["--shape", "Mx4096x4096_bt", "--range", "1:64"], "--runner synthetic"),      # no GPU, no replay
])
def test_cli_bad_input_names_it(cli, argv, words):
    rc, out, err = cli("tune-dynamic", "hgemm", *argv)
    assert rc == 2 and words in err


def test_cli_synthetic_run_and_export(cli, tmp_path):
    rc, out, err = cli("tune-dynamic", "hgemm", "--shape", "Mx768x768_bt", "--range", "16:512", "--step", "16",
                       "--runner", "synthetic", "--rounds", "1", "--per-round", "6", "--db", str(tmp_path / "c.db"),
                       "--export", str(tmp_path / "b.cu"))
    assert rc == 0, err
    assert "SYNTHETIC" in out and "MODELLED" in out and "dispatch: M 16.." in out
    assert (tmp_path / "b.cu").exists() and list((tmp_path / "synthetic" / "dynamic").glob("*.json"))


@pytest.mark.parametrize("flag", [[], ["--no-row-probe"]])
def test_cli_row_probe_is_on_unless_turned_off(cli, tmp_path, flag):
    rc, out, err = cli("tune-dynamic", "hgemm", "--shape", "Mx768x768_bt", "--range", "16:256", "--step", "16",
                       "--runner", "synthetic", "--rounds", "1", "--per-round", "4", "--db", str(tmp_path / "r.db"),
                       *flag)
    assert rc == 0, err
    saved, = (tmp_path / "synthetic" / "dynamic").glob("*.json")
    kernels = json.loads(saved.read_text())["kernels"]
    assert kernels and all((k["row_us"] is None) == bool(flag) for k in kernels)


def test_the_run_says_where_its_time_went(tuned):
    res = tuned[0]
    assert set(res.phase_s) == {"search", "probes", "verify", "tree"}     # the seeds probed with round 0
    assert all(v >= 0 for v in res.phase_s.values())
    # the laps cover the run from its first measurement to the tree: nothing large left uncounted
    assert 0.8 * res.elapsed_s <= sum(res.phase_s.values()) <= res.elapsed_s
    assert DynamicResult.from_json(json.loads(json.dumps(res.to_json()))).phase_s == res.phase_s


def test_probes_stream_as_their_builds_finish(h100, dw):
    """The GPU measures a kernel's probes as soon as its build is done, not after the whole batch has
    compiled: builds finishing last-submitted first are probed in that order, each kernel's probes
    together and by growing M (the worker grows a row family only as far as it must)."""
    import threading
    from concurrent.futures import Future
    from types import SimpleNamespace

    class Builder:
        def __init__(self):
            self.futures = {}

        def submit(self, spec):
            # the probes' specs render the same kernel as the largest M's: one future a config
            key = spec.name_expression
            return self.futures.setdefault(key, Future())

    class Recording(SyntheticRunner):
        def measure_stream(self, items):
            self.order = []
            for tag, spec, binary in items:
                self.order.append(spec.workload_key)
                yield tag, self.measure(spec, None)

    t = HgemmDynTemplate()
    space = t.space(dw.largest, h100)
    rng = random.Random(7)
    cfgs = []
    while len(cfgs) < 6:
        fam, c = sketch.sample_any({t.family: space}, (dw.hi, dw.N), rng, local_pad=1)
        if c not in cfgs and all(t.render(dw.largest, c, h100).name_expression
                                 != t.render(dw.largest, o, h100).name_expression for o in cfgs):
            cfgs.append(c)
    builder, runner = Builder(), Recording(h100)
    done = SimpleNamespace(ok=True, resources=SimpleNamespace(registers=40, spills=0, smem_static=0))

    def finish_in_reverse():
        exprs = [t.render(dw.largest, c, h100).name_expression for c in cfgs]
        while len(builder.futures) < len(cfgs):
            pass
        for e in reversed(exprs):
            builder.futures[e].set_result(done)
    threading.Thread(target=finish_in_reverse, daemon=True).start()
    mks = measure_micro_kernels(t, cfgs, dw, runner, builder=builder)
    assert all(mk.probes and not mk.error for mk in mks), [(mk.error, mk.report) for mk in mks]
    assert [mk.config for mk in mks] == cfgs
    probe_keys = [[w.key for w in probe_workloads(c, mk.report, dw, h100).values()] for c, mk in zip(cfgs, mks)]
    firsts = [runner.order.index(keys[0]) for keys in probe_keys]
    assert firsts == sorted(firsts, reverse=True), "the last build to finish was probed first"
    for keys in probe_keys:
        ms = [int(k.split("M=")[1].split(",")[0]) for k in sorted(keys, key=runner.order.index)]
        assert ms == sorted(ms)


def test_one_probe_stream_serves_every_template_in_build_order(h100, dw):
    """measure_pairs: the picks of several templates go through one measure_stream, each probed as
    soon as its own build is done (a wgmma kernel finishing first is probed first, though the
    hgemm_dyn picks come first in the list), and each result stays with its pair."""
    import threading
    from concurrent.futures import Future
    from types import SimpleNamespace

    from autosched.dynamic.measurer import measure_pairs
    from autosched.templates.hgemm_wgmma import HgemmWgmmaDynTemplate

    class Builder:
        def __init__(self):
            self.futures = {}

        def submit(self, spec):
            return self.futures.setdefault(spec.name_expression, Future())

    class Recording(SyntheticRunner):
        streams = 0

        def measure_stream(self, items):
            Recording.streams += 1
            self.order = []
            for tag, spec, binary in items:
                self.order.append(spec.family)
                yield tag, self.measure(spec, None)

    dyn_t, wg_t = HgemmDynTemplate(), HgemmWgmmaDynTemplate()
    rng = random.Random(11)
    pairs = [(dyn_t, sketch.sample_any({dyn_t.family: dyn_t.space(dw.largest, h100)}, (dw.hi, dw.N), rng)[1]),
             (wg_t, sketch.sample_any({wg_t.family: wg_t.space(dw.largest, h100)}, (dw.hi, dw.N), rng)[1])]
    builder, runner = Builder(), Recording(h100)
    done = SimpleNamespace(ok=True, resources=SimpleNamespace(registers=40, spills=0, smem_static=0))

    def wgmma_first():
        exprs = [t.render(dw.largest, c, h100).name_expression for t, c in pairs]
        while len(builder.futures) < len(pairs):
            pass
        for e in reversed(exprs):
            builder.futures[e].set_result(done)
    threading.Thread(target=wgmma_first, daemon=True).start()
    mks = measure_pairs(pairs, dw, runner, builder=builder)
    assert Recording.streams == 1
    assert [(mk.family, mk.config) for mk in mks] == [(t.family, c) for t, c in pairs]
    assert all(mk.ok for mk in mks), [mk.error for mk in mks]
    assert runner.order[0] == "hgemm_wgmma" and set(runner.order) == {"hgemm_dyn", "hgemm_wgmma"}


def test_the_dynamic_front_imports_on_its_own():
    """api re-exports the dynamic front, which imports api: either may be imported first."""
    import sys
    for first in ("autosched.dynamic.front", "autosched.api"):
        r = subprocess.run([sys.executable, "-c", f"import {first}; import autosched; autosched.tune_dynamic"],
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, f"import {first} first: {r.stderr[-400:]}"


def test_the_seeds_are_probed_in_one_batch_with_the_first_round(h100, dw, monkeypatch):
    """One round trip of NVRTC and the GPU for the seeds and round 0's picks, not two: the first batch
    holds the ladder's configs and the round's sampled ones."""
    import autosched.dynamic.tune as dyn_tune
    from autosched.dynamic.sketch import seed_kernels
    batches = []
    real = dyn_tune.measure_pairs

    def spy(pairs, *a, **kw):
        batches.append([dict(c) for _, c in pairs])
        return real(pairs, *a, **kw)
    monkeypatch.setattr(dyn_tune, "measure_pairs", spy)
    res = tune_dynamic(dw, HgemmDynTemplate(), SyntheticRunner(h100), None, rounds=2, per_round=6, seed=3)
    seeds = [c for _, c, _ in seed_kernels(dw, [HgemmDynTemplate()], h100)]
    assert len(batches) == 2 and res.seeds == len(seeds) == 3
    assert batches[0][:3] == seeds and len(batches[0]) == 3 + 6 and len(batches[1]) == 6
