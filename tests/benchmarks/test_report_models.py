"""The README's models block: each table from its benchmark's newest file, every summary figure
with its bar and a verdict that follows the figure, nothing rendered for a benchmark never run."""

import json

from autosched.report_models import dynamic_table, model_tune_table, models_block, transfer_table


def _doc(name, rows, summary):
    return {"benchmark": name, "device": "GPU X", "date": "2026-01-01", "rows": rows, "summary": summary}


def test_dynamic_table_geomeans_and_verdicts():
    rows = [{"shape": "Mx64x64_bt", "range": [1, 64], "dynamic_tune_s": 2.0, "per_instance_tune_s": 12.0,
             "tuning_time_speedup": 6.0,
             "untuned": [{"M": 10, "vs_per_instance": 0.5, "vs_cublas": 2.0},
                         {"M": 300, "vs_per_instance": 2.0, "vs_cublas": 0.1}]}]
    s = {"tuning_time_speedup": 6.0, "untuned_geomean_vs_per_instance": 1.0, "geomean_vs_cublas_m_le_256": 2.0,
         "bars": {"tuning_time_speedup": 5.0, "untuned_geomean_vs_per_instance": 0.9, "geomean_vs_cublas_m_le_256": 1.0}}
    t = dynamic_table(_doc("dynamic", rows, s))
    assert "| 2.0 | 12.0 | 6.00 | 1.000 | 2.000 |" in t      # geomean of 0.5 and 2; only M <= 256 vs cuBLAS
    assert "| `tuning_time_speedup` | 6.000 | >= 5.0 | met |" in t


def test_a_cublas_geomean_whose_paired_rounds_straddle_the_bar_is_not_called_met():
    def pt(M, v, lo, hi):
        return {"M": M, "vs_per_instance": 1.0, "vs_cublas": v, "cublas_paired": {"vs_cublas_range": [lo, hi]}}
    rows = [{"shape": "Mx64x64_bt", "range": [1, 512], "dynamic_tune_s": 2.0, "per_instance_tune_s": 12.0,
             "tuning_time_speedup": 6.0, "untuned": [pt(10, 1.02, 0.98, 1.03), pt(40, 1.0, 0.99, 1.01),
                                                      pt(300, 0.5, 0.4, 0.6)]}]
    bars = {"geomean_vs_cublas_m_le_256": 1.0}
    t = dynamic_table(_doc("dynamic", rows, {"geomean_vs_cublas_m_le_256": 1.01, "bars": bars}))
    lo, hi = (0.98 * 0.99) ** 0.5, (1.03 * 1.01) ** 0.5          # M = 300 left out
    assert f"| 1.010 ({lo:.3f} to {hi:.3f} over its paired rounds) | >= 1.0 | within its spread (low {lo:.3f}) |" in t
    rows[0]["untuned"][:2] = [pt(10, 1.05, 1.03, 1.06), pt(40, 1.04, 1.02, 1.05)]
    assert "over its paired rounds) | >= 1.0 | met |" in dynamic_table(
        _doc("dynamic", rows, {"geomean_vs_cublas_m_le_256": 1.045, "bars": bars}))
    # the same kernels timed as series in the same process: shown, and a low one is a low reading too
    for p, (ours, theirs) in zip(rows[0]["untuned"], ((10.0, 10.2), (10.0, 9.6), (1.0, 1.0))):
        p["cublas_paired"]["series"] = {"ours_us": ours, "cublas_us": theirs}
    series = (1.02 * 0.96) ** 0.5
    t = dynamic_table(_doc("dynamic", rows, {"geomean_vs_cublas_m_le_256": 1.045, "bars": bars}))
    assert f"over its paired rounds; {series:.3f} as series) | >= 1.0 | within its spread (low {series:.3f}) |" in t
    rows[0]["untuned"][0].pop("cublas_paired")                  # a run before the pairing: no range, plain verdict
    assert "| `geomean_vs_cublas_m_le_256` | 1.045 | >= 1.0 | met |" in dynamic_table(
        _doc("dynamic", rows, {"geomean_vs_cublas_m_le_256": 1.045, "bars": bars}))


def test_transfer_and_model_tables_say_not_met_and_not_measured():
    tr = _doc("model-transfer", [{"N": 8, "K": 16, "model": "m", "trials512_us": 1.0, "zero_trial_vs_512": 0.8,
                                  "trials32_vs_512": 0.9, "default_vs_512": 0.7}],
              {"shapes": 1, "zero_trial_geomean": 0.8, "trials32_geomean": 0.9, "default_geomean": 0.7})
    t = transfer_table(tr)
    assert "| 8x16 | m | 1.00 | 0.800 | 0.900 | 0.700 |" in t and "(bar >= 0.87: not met)" in t
    mt = _doc("model-tune", [{"model": "a", "format": "fp16", "phase": "after", "tokens_per_s": 10.0,
                              "bw_limit_tokens_per_s": 20.0, "pct_of_bw_limit": 50.0}],
              {"tune_model_1b_minutes": 11.0, "pct_of_bw_limit_1b_fp16": 50.0,
               "bars": {"tune_model_1b_minutes": 10.0, "pct_of_bw_limit_1b_fp16": 75.0,
                        "pct_of_bw_limit_1b_q4": 45.0, "pct_of_bw_limit_7b_q4_as_shipped": 80.0}})
    t = model_tune_table(mt)
    assert "| `tune_model_1b_minutes` | 11.00 | <= 10.0 | not met |" in t
    assert "| `a` | fp16 | after | 10 | 20 | 50.0 |" in t              # a row without rounds: no range
    mt["rows"][0].update(pct_range=[49.0, 51.5], rounds=[{}] * 5)
    mt["summary"]["pct_of_bw_limit_1b_fp16_range"] = [49.0, 51.5]
    t = model_tune_table(mt)
    assert "| `a` | fp16 | after | 10 | 20 | 50.0 (49.0-51.5 over 5 rounds) |" in t
    assert "| `pct_of_bw_limit_1b_fp16` | 50.00 (49.0-51.5) | >= 75.0 | not met |" in t
    assert "| `pct_of_bw_limit_7b_q4_as_shipped` | – | >= 80.0 | not measured |" in t


def test_block_from_the_newest_files_only(tmp_path):
    assert models_block(tmp_path) is None
    mt = _doc("model-tune", [], {"tune_model_1b_minutes": 3.0, "bars": {}})
    (tmp_path / "model-tune-GPU_X-2026-01-01.json").write_text(json.dumps(mt))
    block = models_block(tmp_path)
    assert "Whole models" in block and "DietCode" not in block


def test_dynamic_table_shows_the_spread_over_runs_of_one_device_and_date(tmp_path):
    def doc(v, date="2026-01-01"):
        return {**_doc("dynamic", [], {"tuning_time_speedup": v, "untuned_geomean_vs_per_instance": 1.0,
                                       "geomean_vs_cublas_m_le_256": 0.5, "bars": {}}), "date": date}
    for name, d in (("dynamic-GPU_X-2026-01-01.json", doc(5.4)), ("dynamic-GPU_X-2026-01-01-2.json", doc(5.6)),
                    ("dynamic-GPU_X-2025-12-01.json", doc(9.0, "2025-12-01"))):
        (tmp_path / name).write_text(json.dumps(d))
    block = models_block(tmp_path)
    assert "| `tuning_time_speedup` | 5.600 |" in block          # the newest run's figure
    assert "Over the 2 runs of this device, date and settings" in block
    assert "`tuning_time_speedup` 5.400 to 5.600" in block
    assert "9.000" not in block                                    # another date's run is not in the spread


def test_runs_of_other_settings_are_listed_apart_from_the_spread(tmp_path):
    """A quick run beside full ones, a run without the row probe beside ones with it: the spread is
    over the newest's settings only, the others each named with what differs and their figures."""
    def doc(v, **settings):
        full = {"quick": False, "row_probe": True, **settings}
        return _doc("dynamic", [], {"tuning_time_speedup": v, "untuned_geomean_vs_per_instance": 0.95,
                                    "geomean_vs_cublas_m_le_256": 0.9, "bars": {}, "settings": full})
    for name, d in (("dynamic-GPU_X-2026-01-01.json", doc(6.0, quick=True)),
                    ("dynamic-GPU_X-2026-01-01-2.json", doc(5.7, row_probe=False)),
                    ("dynamic-GPU_X-2026-01-01-3.json", doc(7.4)), ("dynamic-GPU_X-2026-01-01-4.json", doc(7.6))):
        (tmp_path / name).write_text(json.dumps(d))
    block = models_block(tmp_path)
    assert "Over the 2 runs of this device, date and settings" in block and "`tuning_time_speedup` 7.400 to 7.600" in block
    other = block.split("Other runs of this device and date, with other settings")[1]
    assert "`dynamic-GPU_X-2026-01-01.json` (quick True): 6.000, 0.950, 0.900" in other
    assert "`dynamic-GPU_X-2026-01-01-2.json` (row_probe False): 5.700" in other
    assert "5.700 to" not in block and "6.000 to" not in block


def test_runs_split_over_calls_differently_are_one_setting_and_an_unrecorded_one_says_so(tmp_path):
    """resumed_rows says how a run was split over device calls, not how it measured: runs differing in it
    alone share a spread; a setting an older run did not record is named as not recorded."""
    def doc(v, **settings):
        return _doc("dynamic", [], {"tuning_time_speedup": v, "untuned_geomean_vs_per_instance": 0.95,
                                    "geomean_vs_cublas_m_le_256": 1.0, "bars": {}, "settings": {"quick": False, **settings}})
    for name, d in (("dynamic-GPU_X-2026-01-01.json", doc(6.0, resumed_rows=2)),
                    ("dynamic-GPU_X-2026-01-01-2.json", doc(7.0, pairing="abba", resumed_rows=3)),
                    ("dynamic-GPU_X-2026-01-01-3.json", doc(7.2, pairing="abba", resumed_rows=6))):
        (tmp_path / name).write_text(json.dumps(d))
    block = models_block(tmp_path)
    assert "Over the 2 runs of this device, date and settings" in block and "`tuning_time_speedup` 7.000 to 7.200" in block
    assert "`dynamic-GPU_X-2026-01-01.json` (pairing not recorded): 6.000" in block


def test_each_gpu_model_of_the_newest_date_gets_its_own_dynamic_table(tmp_path):
    def doc(v, device):
        return {**_doc("dynamic", [], {"tuning_time_speedup": v, "untuned_geomean_vs_per_instance": 1.0,
                                       "geomean_vs_cublas_m_le_256": 0.5, "bars": {}}), "device": device}
    for name, d in (("dynamic-A-2026-01-01.json", doc(5.4, "GPU A")), ("dynamic-B-2026-01-01.json", doc(4.2, "GPU B")),
                    ("dynamic-B-2026-01-01-2.json", doc(4.3, "GPU B"))):
        (tmp_path / name).write_text(json.dumps(d))
    block = models_block(tmp_path)
    assert block.count("DietCode (") == 2 and "GPU A, 2026-01-01" in block and "GPU B, 2026-01-01" in block
    assert "`tuning_time_speedup` 4.200 to 4.300" in block and "| `tuning_time_speedup` | 5.400 |" in block


def test_model_table_takes_each_row_from_the_newest_run_that_measured_it(tmp_path):
    """A later call that re-reads the 7B alone: its row and figure replace the older ones, the 1B rows and
    figures stay from the full run, each named with its run; another device's run is not mixed in."""
    def row(model, fmt, phase, pct):
        return {"model": model, "format": fmt, "phase": phase, "tokens_per_s": pct * 10, "bw_limit_tokens_per_s": 1000,
                "pct_of_bw_limit": pct}
    bars = {"pct_of_bw_limit_1b_fp16": 75.0, "pct_of_bw_limit_7b_q4_as_shipped": 80.0, "tune_model_1b_minutes": 10.0}
    full = {**_doc("model-tune", [row("random:a", "fp16", "after", 79.0), row("llama2-7b", "q4f16_1", "as shipped", 82.3)],
                   {"pct_of_bw_limit_1b_fp16": 79.0, "pct_of_bw_limit_7b_q4_as_shipped": 82.3, "tune_model_1b_minutes": 3.0,
                    "bars": bars}), "date": "2026-01-01"}
    seven = {**_doc("model-tune", [row("llama2-7b", "q4f16_1", "as shipped", 79.9)],
                    {"pct_of_bw_limit_7b_q4_as_shipped": 79.9, "bars": bars}), "date": "2026-01-02"}
    other = {**_doc("model-tune", [row("random:a", "fp16", "after", 50.0)], {"pct_of_bw_limit_1b_fp16": 50.0, "bars": bars}),
             "date": "2026-01-03", "device": "GPU Y"}
    for name, d in (("model-tune-X-2026-01-01.json", full), ("model-tune-X-2026-01-02.json", seven),
                    ("model-tune-Y-2026-01-03.json", other)):
        (tmp_path / name).write_text(json.dumps(d))
    t = model_tune_table(seven, [json.loads((tmp_path / n).read_text()) | {"_path": str(tmp_path / n)}
                                 for n in ("model-tune-Y-2026-01-03.json", "model-tune-X-2026-01-02.json",
                                           "model-tune-X-2026-01-01.json")])
    assert "| `random:a` | fp16 | after | 790 | 1000 | 79.0 | `model-tune-X-2026-01-01.json` |" in t
    assert "| `llama2-7b` | q4f16_1 | as shipped | 799 | 1000 | 79.9 | `model-tune-X-2026-01-02.json` |" in t
    assert "82.3" not in t and "50.0" not in t and "GPU Y" not in t
    assert "| `pct_of_bw_limit_7b_q4_as_shipped` | 79.90 | >= 80.0 | not met | `model-tune-X-2026-01-02.json` |" in t
    assert "| `pct_of_bw_limit_1b_fp16` | 79.00 | >= 75.0 | met | `model-tune-X-2026-01-01.json` |" in t
    # one run alone: no run column
    assert "| run |" not in model_tune_table(full)
