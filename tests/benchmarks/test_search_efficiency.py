"""The tuning-efficiency study on a synthetic whole-space recording (SGEMM 16x16x16)."""

import math

import pytest

from autosched.benchmarks.search_efficiency import main, study, trials_to_within
from autosched.measure.recording import Recording
from autosched.measure.result import Measurement, Status
from autosched.templates import SgemmTemplate
from autosched.workloads import Sgemm


@pytest.fixture(scope="module")
def whole_space(h100, tmp_path_factory):
    w = Sgemm(16, 16, 16)
    t = SgemmTemplate()
    space = t.space(w, h100)
    rec = Recording(w.key, t.family, h100, space.names, space_size=space.size())
    for c in space:
        # a smooth landscape with one best region, like real tile-size effects
        x = (math.log2(c["bm"]) - 6) ** 2 + (math.log2(c["bk"]) - 4) ** 2 + c["splitk"] / 4 + c["pad"] / 8
        rec.add(c, Measurement(Status.OK, 10 + x, 10 + x, 0.1, 0.0))
    path = tmp_path_factory.mktemp("rec") / "whole.json.gz"
    rec.save(path)
    return Recording.load(path)


def test_curves_are_monotone_and_reach_the_optimum(whole_space):
    r = study(whole_space, seeds=(0,), trial_fraction=0.03)
    assert r["optimum_us"] == min(m.median_us for _, m in whole_space.entries.values())
    assert set(r["strategies"]) == {"random", "evolutionary", "evolutionary-model"}
    for s in r["strategies"].values():
        (c,) = s["curves"]
        assert len(c) == r["trials"]
        assert all(b <= a for a, b in zip(c, c[1:]))
        reach = s["trials_within_5pct"][0]
        assert reach is None or c[reach - 1] <= r["optimum_us"] * 1.05
        f = s["median_fraction_within_5pct"]
        assert f is None or 0 < f <= 1


def test_trials_to_within():
    assert trials_to_within([20, 12, 10.4, 10], 10.0) == 3
    assert trials_to_within([20, 12], 10.0) is None


def test_a_partial_recording_is_refused(h100, tmp_path):
    w = Sgemm(16, 16, 16)
    rec = Recording(w.key, "sgemm", h100, ["bm"], space_size=10)
    rec.save(tmp_path / "part.json.gz")
    with pytest.raises(SystemExit):
        main([str(tmp_path / "part.json.gz"), "--out", str(tmp_path)])


def test_median_fraction_counts_a_seed_that_never_got_there_as_infinite():
    from autosched.benchmarks.search_efficiency import median_fraction
    assert median_fraction([10, 20, None], 100) == 0.2
    assert median_fraction([10, None, None], 100) is None


def test_the_study_renders_into_the_readme_block(whole_space, tmp_path, h100):
    import json

    from autosched.results_files import replace_block
    from autosched.report_sgemm import search_table
    assert main([whole_space.path, "--seeds", "2", "--trial-fraction", "0.03", "--out", str(tmp_path),
                 "--plots", str(tmp_path / "plots")]) == 0
    (path,) = tmp_path.glob("search-efficiency-*.json")
    doc = json.loads(path.read_text())
    doc["_path"] = str(path)
    r = doc["rows"][0]
    assert r["workload"] == whole_space.workload_key and len(r["strategies"]["random"]["curves"]) == 2
    text = search_table(doc)
    for name in ("random", "evolutionary", "evolutionary-model"):
        assert f"| {name} |" in text
    assert "bar: ≤ 10%" in text and (tmp_path / "plots" / "search-efficiency.png").exists()
    readme = replace_block("a\n<!-- results:search -->\nold\n<!-- /results:search -->\nb", "search", text)
    assert "old" not in readme and text in readme


def test_a_pool_of_searches_gives_the_curves_one_process_gives(whole_space):
    seen = []
    one = study(whole_space, seeds=(0, 1), trial_fraction=0.02)
    two = study(whole_space, seeds=(0, 1), trial_fraction=0.02, jobs=2, progress=lambda d, n: seen.append((d, n)))
    assert seen[-1] == (6, 6) and [d for d, _ in seen] == list(range(1, 7))
    for name, s in one["strategies"].items():
        assert two["strategies"][name]["curves"] == s["curves"]
