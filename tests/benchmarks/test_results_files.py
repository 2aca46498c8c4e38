"""Results files: a second run on the same day gets its own file, and the report reads the newest
run of the newest day first."""

import json

from autosched.benchmarks.common import write_results
from autosched.report import all_results


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
