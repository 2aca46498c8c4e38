"""The README's dataflow block is made from bench/results (report_dataflow.py) and is up to date."""

import json
from pathlib import Path

from autosched.report_dataflow import ab_table, dataflow_block
from autosched.results_files import replace_block

ROOT = Path(__file__).resolve().parents[1]


def test_the_readme_block_is_the_one_the_results_make():
    block = dataflow_block(ROOT / "bench/results")
    assert block is not None and "dataflow-q4-words-NVIDIA_H200-2026-11-28.json" in block
    readme = (ROOT / "README.md").read_text()
    assert replace_block(readme, "dataflow", block) == readme


def test_a_row_shows_the_fastest_choice_against_the_per_kernel_step(tmp_path):
    doc = {"benchmark": "dataflow", "run": 1, "device": "GPU", "date": "2026-01-01", "copy_gbps": 1000.0,
           "rows": [{"model": "m", "format": "fp16", "bw_limit_tokens_per_s": 200.0,
                     "kernels_tokens_per_s": [99.0, 100.0],
                     "dataflow": {"base 3x32K r16 2/SM": {"tokens_per_s": [150.0, 151.0], "rel_err": 1e-3},
                                  "base 4x48K r32": {"tokens_per_s": [120.0], "rel_err": 2e-3}}}]}
    (tmp_path / "dataflow-x-2026-01-01.json").write_text(json.dumps(doc))
    doc["_path"] = str(tmp_path / "dataflow-x-2026-01-01.json")
    line = ab_table(doc).splitlines()[-1]
    assert line == "| m fp16 | 99-100 | 3x32K r16 2/SM | 150-151 | 1.510 | 75.5% | 1.0e-03 |"
    assert dataflow_block(tmp_path).endswith(line)
    assert dataflow_block(tmp_path / "none") is None
