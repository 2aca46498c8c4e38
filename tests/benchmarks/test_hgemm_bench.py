"""`bench hgemm` on the CPU: issue 15's shape list, the time budget and its split over templates,
the summary over rows (a template missing for a shape included), cuBLAS's operand views in every
layout and BF16, and the README tables."""

import numpy as np
import pytest

from autosched.benchmarks import hgemm as hb
from autosched.workloads import Hgemm


def test_default_shapes_are_the_issues():
    shapes = hb.default_shapes()
    assert len(shapes) == len(set(shapes)) == 18
    for n in (1024, 4096, 8192):
        assert f"{n}x{n}x{n}" in shapes and f"{n}x{n}x{n}_bf16" in shapes
    for m in (128, 512, 2048):
        for n, k in ((4096, 4096), (11008, 4096), (4096, 11008)):
            w = Hgemm.from_shape(f"{m}x{n}x{k}_bt")
            assert w.shape_str in shapes and hb.is_prefill(w)
    layouts = {Hgemm.from_shape(s).layout for s in shapes if s.startswith("4096x4096x4096") and "bf16" not in s}
    assert layouts == {"nn", "nt", "tn", "tt"}
    assert not hb.is_prefill(Hgemm.from_shape("4096x4096x4096_bt"))


def test_templates_carved_from_wgmma_never_leave_it_without_time():
    """Split-K and the clusters both take their shares out of hgemm_wgmma's: together they get
    at most half of it, scaled down alike, whatever split the user gives (before, a split of
    wgmma=0.3,wgmma_splitk=0.3 left hgemm_wgmma and the other carved template no time at all)."""
    fams = ["hgemm_mma", "hgemm_wgmma", "hgemm_wgmma_splitk", "hgemm_wgmma_cluster"]
    t = hb.split_time(fams, 10.0, {"hgemm_wgmma": 0.3, "hgemm_wgmma_splitk": 0.3, "hgemm_wgmma_cluster": 0.2,
                                   "hgemm_mma": 0.2})
    # wgmma keeps 0.15; split-K and the clusters share the other 0.15 as 3 : 2
    assert t == pytest.approx({"hgemm_mma": 4.0, "hgemm_wgmma": 3.0, "hgemm_wgmma_splitk": 1.8,
                               "hgemm_wgmma_cluster": 1.2})
    t = hb.split_time(fams, 10.0)          # the defaults: 0.3 + 0.3 wanted of wgmma's 0.6, 0.3 given
    assert t["hgemm_wgmma"] > 0
    assert t["hgemm_wgmma"] == pytest.approx(t["hgemm_wgmma_splitk"] + t["hgemm_wgmma_cluster"])
    assert t["hgemm_wgmma_splitk"] / t["hgemm_wgmma_cluster"] == pytest.approx(1.0)


def test_split_renormalizes_over_the_templates_present():
    t = hb.split_time(["hgemm_mma", "hgemm_wmma", "hgemm_wgmma"], 10.0)
    assert t == pytest.approx({"hgemm_mma": 2.0, "hgemm_wmma": 2.0, "hgemm_wgmma": 6.0})
    t = hb.split_time(["hgemm_mma", "hgemm_wmma"], 10.0)       # wgmma refuses the shape
    assert t == pytest.approx({"hgemm_mma": 5.0, "hgemm_wmma": 5.0})
    assert hb.parse_split("wgmma=1,mma=0") == {"hgemm_wgmma": 1.0, "hgemm_mma": 0.0}
    with pytest.raises(ValueError):
        hb.parse_split("tma=1")


def test_default_plan_fits_nine_minutes_and_prints_the_wgmma_space(h100, capsys):
    ws = [Hgemm.from_shape(s) for s in hb.default_shapes()]
    plan = hb.plan(ws, h100)
    est = hb.plan_estimate_s(ws, h100, plan)
    assert est <= hb.TARGET_S <= 540
    big = Hgemm.from_shape("4096x4096x4096")
    sizes = {f: b.space for f, b in plan[big.key].items()}
    with capsys.disabled():
        print(f"\nspace sizes at 4096^3 on the H100: {sizes}; default plan estimated {est:.0f} s")
    # (1152 wgmma configs since rings of 10 to 16 slots, 2026-11-26)
    assert set(sizes) == {"hgemm_mma", "hgemm_wmma", "hgemm_wgmma", "hgemm_wgmma_cluster", "hgemm_wgmma_sched"}
    assert sizes["hgemm_wgmma"] < 1500
    for key, per in plan.items():
        for f, b in per.items():
            assert 1 <= b.trials <= b.space and b.batch * b.cost_s <= max(b.time_s / 3, 2 * b.cost_s)
        # wgmma gets the largest share of every shape it serves
        assert per["hgemm_wgmma"].time_s > per["hgemm_mma"].time_s
    # a shape a bar names gets more time than one that none does
    assert plan[big.key]["hgemm_wgmma"].time_s > plan[Hgemm.from_shape("4096x4096x4096_tn").key]["hgemm_wgmma"].time_s
    # an explicit time per shape is split as asked, and --trials caps
    p = hb.plan([big], h100, time_per_shape_s=10.0, split={"hgemm_wgmma": 1, "hgemm_mma": 1, "hgemm_wmma": 0}, trials=3)
    assert p[big.key]["hgemm_wgmma"].time_s == pytest.approx(7.5) and p[big.key]["hgemm_wmma"].time_s == 0
    assert all(b.trials <= 3 for b in p[big.key].values())


def test_wgmma_is_left_out_of_the_plan_where_it_refuses(h100):
    from dataclasses import replace
    odd = Hgemm.from_shape("128x4100x4096_bt")      # N % 8: wgmma's TMA store refuses
    assert set(hb.plan([odd], h100, time_per_shape_s=6)[odd.key]) == {"hgemm_mma", "hgemm_wmma", "hgemm_stream"}
    a100 = replace(h100, cc=(8, 0), name="NVIDIA A100")
    w = Hgemm.from_shape("4096x4096x4096")
    assert "hgemm_wgmma" not in hb.plan([w], a100, time_per_shape_s=6)[w.key]


def test_split_k_takes_its_time_out_of_wgmma_s(h100, monkeypatch):
    """hgemm_wgmma_splitk is planned only where its space has configs (few tiles: prefill M = 128 and
    512, 1024^3), with a share carved out of hgemm_wgmma's: every shape's time, the other templates'
    shares and the run's estimate stay what they are without it."""
    import dataclasses

    from autosched import registry
    h = registry.FAMILIES["hgemm"]       # split-K's carving alone: the other carved templates left out
    monkeypatch.setitem(registry.FAMILIES, "hgemm", dataclasses.replace(
        h, templates=tuple(x for x in h.templates if x.family not in ("hgemm_wgmma_cluster", "hgemm_wgmma_sched"))))
    t = hb.split_time(["hgemm_mma", "hgemm_wmma", "hgemm_wgmma", "hgemm_wgmma_splitk"], 10.0)
    assert t == pytest.approx({"hgemm_mma": 2.0, "hgemm_wmma": 2.0, "hgemm_wgmma": 3.0, "hgemm_wgmma_splitk": 3.0})
    assert hb.parse_split("wgmma_splitk=0.5,wgmma=1") == {"hgemm_wgmma_splitk": 0.5, "hgemm_wgmma": 1.0}
    ws = [Hgemm.from_shape(s) for s in hb.default_shapes()]
    plan = hb.plan(ws, h100)
    with_split = {w.shape_str for w in ws if "hgemm_wgmma_splitk" in plan[w.key]}
    assert with_split == {s for s in hb.default_shapes() if s.startswith(("128x", "512x", "1024x"))}
    est = hb.plan_estimate_s(ws, h100, plan)
    h = registry.FAMILIES["hgemm"]
    monkeypatch.setitem(registry.FAMILIES, "hgemm", dataclasses.replace(
        h, templates=tuple(x for x in h.templates if x.family != "hgemm_wgmma_splitk")))
    without = hb.plan(ws, h100)
    for w in ws:
        p, q = plan[w.key], without[w.key]
        assert sum(b.time_s for b in p.values()) == pytest.approx(sum(b.time_s for b in q.values()), rel=0.01)
        assert p["hgemm_mma"].time_s == pytest.approx(q["hgemm_mma"].time_s, rel=0.01)
        if w.shape_str in with_split:
            assert p["hgemm_wgmma"].time_s + p["hgemm_wgmma_splitk"].time_s == pytest.approx(q["hgemm_wgmma"].time_s,
                                                                                          rel=0.01)
            assert p["hgemm_wgmma_splitk"].space > 0 and p["hgemm_wgmma_splitk"].trials >= 4
    assert est <= hb.TARGET_S and est == pytest.approx(hb.plan_estimate_s(ws, h100, without), rel=0.02)


def test_seeds_are_in_the_spaces_they_are_meant_for(h100):
    from autosched.registry import template_named
    w = Hgemm.from_shape("8192x8192x8192")
    for fam, seeds in hb.SEEDS.items():
        t = template_named(fam)
        firsts = hb.first_configs(t, w, h100)
        assert firsts[0] == t.default_config(w, h100) and all(s in firsts for s in seeds)


def _row(shape, cublas, **tuned):
    w = Hgemm.from_shape(shape)
    r = hb.row_head(w, hb.is_prefill(w))
    r["cublas_us"] = cublas
    for f, us in tuned.items():
        r["templates"][f"hgemm_{f}"] = {"tuned_us": us, "default_us": 2 * us, "trials": 10, "tune_s": 5.0}
    return hb.finish_row(r, w.flops())


def test_summary_over_rows_with_a_template_missing():
    rows = [_row("4096x4096x4096", 180.0, wgmma=190.0, mma=480.0, wmma=500.0),
            _row("8192x8192x8192", 1460.0, wgmma=1500.0, mma=4000.0, wmma=4200.0),
            _row("4096x4096x4096_bf16", 185.0, wgmma=200.0),
            _row("4096x4096x4096_tn", 180.0, wgmma=180.0),
            _row("128x4096x4096_bt", 20.0, wgmma=25.0, mma=22.0),
            _row("512x11008x4096_bt", 68.0, mma=100.0, wmma=120.0)]     # as if wgmma refused it
    r0 = rows[0]
    assert r0["best_template"] == "hgemm_wgmma" and r0["best_pct_of_cublas"] == pytest.approx(100 * 180 / 190)
    assert r0["templates"]["hgemm_wgmma"]["tflops"] == pytest.approx(2 * 4096**3 / 190e-6 / 1e12)
    assert r0["templates"]["hgemm_mma"]["default_pct_of_cublas"] == pytest.approx(100 * 180 / 960)
    assert r0["cublas_tflops"] == pytest.approx(2 * 4096**3 / 180e-6 / 1e12)
    s = hb.summarize_rows(rows)
    assert s["best_pct_of_cublas_4096"] == pytest.approx(100 * 180 / 190)
    assert s["best_pct_of_cublas_8192"] == pytest.approx(100 * 1460 / 1500)
    assert s["wmma_pct_of_cublas_4096"] == pytest.approx(36.0)
    # the prefill minimum is over each shape's best template, the one without wgmma included
    assert s["min_pct_of_cublas_prefill"] == pytest.approx(68.0)
    assert s["prefill_shapes"] == s["prefill_shapes_measured"] == 2
    assert s["best_pct_of_cublas_4096_bf16"] == pytest.approx(92.5)
    assert s["best_pct_of_cublas_4096_by_layout"] == {"nn": pytest.approx(100 * 180 / 190), "nt": None,
                                                       "tn": pytest.approx(100.0), "tt": None}
    assert s["max_pct_of_cublas_hgemm_wgmma"] == pytest.approx(100.0)
    assert s["max_pct_of_cublas_hgemm_mma"] == pytest.approx(100 * 20 / 22)
    assert s["bars_met"] == {"best_4096_ge_95": False, "best_8192_ge_95": True, "prefill_ge_90": False,
                             "wmma_4096_ge_30": True}
    # a prefill shape with nothing timed leaves the minimum unknown, not the others' minimum
    rows.append(_row("2048x4096x11008_bt", 100.0))
    s = hb.summarize_rows(rows)
    assert s["min_pct_of_cublas_prefill"] is None and s["prefill_shapes_measured"] == 2
    assert hb.summarize_rows([])["best_pct_of_cublas_4096"] is None


@pytest.mark.parametrize("layout", ["nn", "nt", "tn", "tt"])
@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_cublas_views_read_the_stored_operands_as_the_logical_matrices(layout, dtype):
    torch = pytest.importorskip("torch")
    w = Hgemm.from_shape("24x40x16", layout=layout, dtype=dtype)
    inputs = w.inputs(seed=3)
    a_log, b_log = w.logical(inputs)
    stored = {n: torch.from_numpy(np.ascontiguousarray(inputs[n])) for n in ("A", "B")}
    a, b = hb.cublas_operands(w, stored["A"], stored["B"])
    assert tuple(a.shape) == (w.M, w.K) and tuple(b.shape) == (w.K, w.N)
    assert a.data_ptr() == stored["A"].data_ptr() and b.data_ptr() == stored["B"].data_ptr()     # views
    assert a.dtype == b.dtype == (torch.bfloat16 if w.bf16 else torch.float16)
    # the view logic, in float32 against numpy's product of the logical matrices
    got = torch.matmul(a.float(), b.float()).numpy()
    np.testing.assert_allclose(got, a_log @ b_log, rtol=1e-5, atol=1e-4)
    # and the output as torch writes it: into the (M, N) buffer of the workload's storage
    shape, dt = w.output_spec()
    out = torch.from_numpy(np.zeros(shape, dt))
    torch.matmul(a, b, out=hb.cublas_out(w, out))
    assert w.check(out.numpy(), w.reference(inputs), w.error_bound(inputs)).ok


def test_cublas_has_no_blocked_layout():
    torch = pytest.importorskip("torch")
    w = Hgemm.from_shape("32x32x32_bb")
    with pytest.raises(ValueError, match="blocked"):
        hb.cublas_operands(w, torch.zeros(1), torch.zeros(1))


def test_poison_and_host_copy_of_a_bf16_output():
    torch = pytest.importorskip("torch")
    w = Hgemm.from_shape("16x16x16_bf16")
    out = torch.from_numpy(np.zeros((16, 16), np.uint16))
    hb._poison(out)
    host = hb._host(out)
    assert host.dtype == np.uint16 and not w.check(host, np.zeros((16, 16))).ok
    from autosched.bf16 import bf16_bits_to_float32
    assert np.isnan(bf16_bits_to_float32(host)).all()


def test_readme_tables_per_template():
    from autosched.report_sgemm import hgemm_tables
    rows = [_row("4096x4096x4096", 180.0, wgmma=190.0, mma=480.0, wmma=500.0),
            _row("128x4100x4096_bt", 20.0, mma=22.0, wmma=30.0)]
    rows[0]["templates"]["hgemm_wgmma"]["min_median_spread_pct"] = 1.25
    doc = {"benchmark": "hgemm", "device": "GPU", "date": "2026-01-01", "commit": "ab" * 20,
           "_path": "bench/results/hgemm-x.json", "rows": rows, "summary": hb.summarize_rows(rows)}
    text = hgemm_tables(doc)
    assert "4096³ **94.7%**" in text and "wmma at 4096³ **36.0%**" in text
    for f in ("hgemm_mma", "hgemm_wmma", "hgemm_wgmma"):
        assert f"`{f}`" in text
    wg = text.split("`hgemm_wgmma`")[1].splitlines()
    assert wg[4].startswith("| 4096 x 4096 x 4096 | 190.0 | 723 | 94.7% | 1.2% | 380.0 | 47.4% | 180.0 | 764 | 10 | 5 |")
    assert wg[5].startswith("| 128 x 4100 x 4096, B (N, K) | not served |")


def test_hgemm_section_writes_the_block_and_sgemm_keeps_its_own(tmp_path, h100):
    from autosched.benchmarks.common import write_results
    from autosched.registry import FAMILIES
    rows = [_row("4096x4096x4096", 180.0, wgmma=190.0)]
    write_results("hgemm", h100, rows, hb.summarize_rows(rows), tmp_path)
    write_results("sgemm", h100, [{"shape": "64x64x64", "M": 64, "N": 64, "K": 64, "tuned_us": 10.0,
                                   "cublas_us": 9.0, "pct_of_cublas": 90.0, "trials": 5}], {}, tmp_path)
    readme = tmp_path / "README.md"
    readme.write_text("a\n<!-- results:hgemm -->\nold\n<!-- /results:hgemm -->\n"
                      "<!-- results:sgemm -->\nold\n<!-- /results:sgemm -->\n")
    for name in ("hgemm", "sgemm"):
        FAMILIES[name].report_fn()(tmp_path, readme, tmp_path, None, name)
    text = readme.read_text()
    assert "`hgemm_wgmma`" in text and "| 64 x 64 x 64 | 10.00 |" in text and "old" not in text


def test_paired_ratio_alternates_and_takes_the_median_ratio():
    """A clock that slows run by run moves ours and cuBLAS alike when they are timed in alternation:
    each round's ratio of medians holds, where two series taken one after the other would not."""
    from autosched.benchmarks.hgemm import finish_row, paired_ratio
    calls = []

    class Clock:                      # every run 1% slower than the one before, whichever side it is
        def time_alternating(self, first, second, repeat=5):
            ta, tb = [], []
            for _ in range(repeat):
                for f, out in ((first, ta), (second, tb)):
                    out.append(f() * 1.01 ** len(calls))
            return ta, tb

    def ours():
        calls.append("ours")
        return 100.0

    def theirs():
        calls.append("cublas")
        return 95.0
    p = paired_ratio(Clock(), ours, theirs, rounds=3)
    assert calls == ["ours", "cublas"] * 15
    # each cuBLAS run is one step later than its partner: 95 x 1.01 / 100, the same in every round
    assert abs(p["pct_of_cublas"] - 95.95) < 1e-6 and abs(p["pct_max"] - p["pct_min"]) < 1e-6
    assert p["us"][0] == pytest.approx(100.0 * 1.01 ** 5) and p["us"][2] > p["us"][1] > p["us"][0]
    # timed as two series (all ours, then all cuBLAS) the same clock would put cuBLAS at 95 x 1.01^5 / 100
    assert 95 * 1.01 ** 5 > p["pct_of_cublas"] + 3
    # the row's % of cuBLAS is the paired one; the unpaired (separate runs) is kept beside it
    row = {"cublas_us": 144.0 * 0.95, "templates": {"hgemm_wgmma": {"tuned_us": 100.0, "paired": p}}}
    finish_row(row, 2 * 4096 ** 3)
    t = row["templates"]["hgemm_wgmma"]
    assert t["pct_of_cublas"] == pytest.approx(95.95) and t["pct_of_cublas_unpaired"] > 130


def test_a_round_the_host_fell_behind_in_is_timed_again():
    from autosched.benchmarks.hgemm import LATE_REDOS, paired_ratio

    class Late:                     # the second round's cuBLAS runs were reached before they were enqueued
        def __init__(self, late_rounds):
            self.rounds, self.late_rounds, self.host_late = 0, late_rounds, []

        def time_alternating(self, first, second):
            self.rounds += 1
            late = self.rounds in self.late_rounds
            self.host_late = [0, 9 if late else 1]
            return [100.0] * 50, [190.0 if late else 95.0] * 50
    t = Late({2})
    p = paired_ratio(t, lambda: None, lambda: None, rounds=3)
    assert t.rounds == 4 and p["pct_max"] == pytest.approx(95.0) and p["late_rounds_redone"] == [[0, 9]]
    assert p["host_late"] == [[0, 1]] * 3             # one late run in 50 is under the share: kept
    # never more than LATE_REDOS redone: a host that is always late still ends, its rounds kept as they are
    t = Late(set(range(1, 100)))
    p = paired_ratio(t, lambda: None, lambda: None, rounds=3)
    assert t.rounds == 3 + LATE_REDOS and len(p["late_rounds_redone"]) == LATE_REDOS
    assert p["pct_of_cublas"] == pytest.approx(190.0)
