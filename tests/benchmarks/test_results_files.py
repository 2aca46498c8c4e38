"""Results files: a second run on the same day gets its own file, and the report reads the newest
run of the newest day first."""

import json

from autosched.benchmarks.common import write_results
from autosched.results_files import all_results


def test_runs_of_one_day_keep_their_files_and_sort_newest_first(tmp_path, h100):
    paths = [write_results("decode", h100, [{"run": i}], {}, tmp_path) for i in range(3)]
    assert len(set(paths)) == 3 and all(p.exists() for p in paths)
    assert paths[1].name.endswith("-2.json") and paths[2].name.endswith("-3.json")
    docs = all_results(tmp_path, "decode")
    assert [d["rows"][0]["run"] for d in docs] == [2, 1, 0]
    older = json.loads(paths[0].read_text())
    older["date"] = "2000-01-01"
    (tmp_path / "decode-x-2000-01-01-7.json").write_text(json.dumps(older))
    assert all_results(tmp_path, "decode")[-1]["date"] == "2000-01-01"


def test_a_run_writing_as_it_goes_replaces_its_own_file(tmp_path, h100):
    first = write_results("sgemm", h100, [{"shape": 1}], {}, tmp_path)
    again = write_results("sgemm", h100, [{"shape": 1}, {"shape": 2}], {}, tmp_path, path=first)
    assert again == first and len(list(tmp_path.iterdir())) == 1
    assert json.loads(first.read_text())["rows"] == [{"shape": 1}, {"shape": 2}]


def test_sgemm_table_shows_torch_memory_beside_the_ratio_of_record_and_reads_older_runs():
    from autosched.report_sgemm import sgemm_table
    row = {"M": 64, "N": 64, "K": 64, "tuned_us": 10.0, "tuned_tflops": 0.05, "default_us": 20.0,
           "cublas_us": 9.0, "pct_of_cublas": 90.0, "trials": 5}
    doc = {"device": "GPU", "date": "2026-01-01", "commit": "ab" * 20, "_path": "bench/results/sgemm-x.json",
           "rows": [dict(row, torch_memory={"pct_of_cublas": 88.5}), dict(row, M=128, errors={"tuned": "x"})]}
    lines = sgemm_table(doc).splitlines()
    assert lines[4].endswith("| 90.0% | 88.5% | 5 |")
    assert lines[5].startswith("| 128 x 64 x 64 |") and lines[5].endswith("| 90.0% | – | 5 |")
    assert "caching-allocator" in lines[-1]
    # a run from before the shared-buffer protocol has no torch_memory: no column note either
    del doc["rows"][0]["torch_memory"]
    assert "caching-allocator" not in sgemm_table(doc)


def test_launchable_takes_only_identity_layout_inputs_on_the_device():
    from types import SimpleNamespace

    import pytest

    from autosched.benchmarks.common import Launchable
    from autosched.templates.base import ArgSpec
    spec = SimpleNamespace(name_expression="k", args=(ArgSpec("W", "input", layout="blocked"),))
    with pytest.raises(ValueError, match="input W of k is packed in layout blocked"):
        Launchable(spec, SimpleNamespace(ok=True), {}, None, on_device={"W": object()})


def test_hgemm_results_render_with_their_title_and_b_layout():
    from autosched.report_sgemm import sgemm_table
    row = {"shape": "64x11008x4096_bt", "M": 64, "N": 11008, "K": 4096, "tuned_us": 10.0, "tuned_tflops": 1.0,
           "default_us": 20.0, "cublas_us": 9.0, "pct_of_cublas": 90.0, "trials": 5}
    doc = {"benchmark": "hgemm", "device": "GPU", "date": "2026-01-01", "commit": "ab" * 20,
           "_path": "bench/results/hgemm-x.json", "rows": [row]}
    text = sgemm_table(doc)
    assert text.startswith("**FP16 GEMM on tensor cores**") and "FP32 accumulation" in text
    assert "| 64 x 11008 x 4096, B (N, K) | 10.00 |" in text


def test_transfer_merge_keeps_the_earlier_shapes_and_refuses_another_gpu():
    import pytest

    from autosched.benchmarks.transfer import merged_rows
    earlier = {"device_key": "H100", "trials": [32, 512], "rows": [{"workload": "a", "v": 1}, {"workload": "b", "v": 1}]}
    rows = merged_rows([{"workload": "b", "v": 2}, {"workload": "c", "v": 2}], earlier, "H100", (32, 512))
    assert [(r["workload"], r["v"]) for r in rows] == [("a", 1), ("b", 2), ("c", 2)]
    assert merged_rows([{"workload": "c"}], None, "H100", (32, 512)) == [{"workload": "c"}]
    with pytest.raises(ValueError, match="not merged"):
        merged_rows([], earlier, "A100", (32, 512))
    with pytest.raises(ValueError, match="not merged"):
        merged_rows([], earlier, "H100", (32, 256))
