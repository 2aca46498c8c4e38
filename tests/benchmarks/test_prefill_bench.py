"""benchmarks/prefill.py on the CPU: its summary keys from rows, and the key written into the newest
dynamic-*.json of the same device."""

import json
import os

from autosched.benchmarks.prefill import summarize, merge_into_dynamic, ttft_s


def _row(fmt, T, b, s, torch_s=None, short=False):
    r = {"format": fmt, "tokens": T, "short": short, "batched_s": b, "stepwise_s": s, "speedup_vs_stepwise": s / b}
    if torch_s:
        r["torch_s"], r["vs_torch"] = torch_s, torch_s / b
    return r


def test_summary_keys():
    rows = [_row("fp16", 2, 0.02, 0.01, short=True), _row("fp16", 4, 0.02, 0.03, short=True),
            _row("fp16", 2048, 0.2, 10.0, 0.1), _row("q4f16_1", 8, 0.03, 0.02, short=True),
            _row("q4f16_1", 2048, 0.25, 5.0)]
    s = summarize(rows)
    assert s["prefill_2048_speedup_vs_stepwise"] == 50.0 and s["prefill_2048_vs_torch"] == 0.5
    assert s["prefill_2048_q4f16_1_speedup_vs_stepwise"] == 20.0
    assert s["batched_wins_from_fp16"] == 4 and s["batched_wins_from_q4f16_1"] == 2048
    assert s["bars"] == {"prefill_2048_speedup_vs_stepwise": 20.0}
    assert summarize([])["prefill_2048_speedup_vs_stepwise"] is None


def test_merge_into_the_newest_dynamic_results_of_the_device(tmp_path):
    assert merge_into_dynamic(tmp_path, "dev", {"prefill_2048_speedup_vs_stepwise": 30.0}, "p.json") is None
    old, new, other = (tmp_path / f"dynamic-{n}.json" for n in ("a", "b", "c"))
    for p, key in ((old, "dev"), (new, "dev"), (other, "gpu2")):
        p.write_text(json.dumps({"device_key": key, "summary": {"prefill_2048_speedup_vs_stepwise": None}}))
    os.utime(old, (1, 1))
    (tmp_path / "dynamic-bad.json").write_text("{")
    assert merge_into_dynamic(tmp_path, "dev", {"prefill_2048_speedup_vs_stepwise": 30.0}, "x/prefill-1.json") == new
    d = json.loads(new.read_text())["summary"]
    assert d == {"prefill_2048_speedup_vs_stepwise": 30.0, "prefill_results": "prefill-1.json"}
    assert json.loads(old.read_text())["summary"]["prefill_2048_speedup_vs_stepwise"] is None
    assert json.loads(other.read_text())["summary"]["prefill_2048_speedup_vs_stepwise"] is None


def test_ttft_is_a_median_of_synchronized_runs():
    calls = []
    assert ttft_s(lambda: calls.append("run"), lambda: calls.append("sync"), 3) >= 0
    assert calls == ["sync", "run", "sync"] * 3
