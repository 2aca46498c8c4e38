"""The README's scale block: every 2-GPU run of the newest device and date with its spread and a
verdict by the lowest run, and the Ray CPU table; nothing for benchmarks never run."""

import json

from autosched.report_scale import scale_block


def gpu_doc(speedup, date="2026-01-02", gpus=2):
    rows = [{"what": "nvrtc", "configs": 8, "configs_per_s": 20.0},
            {"what": "measuring", "gpus": [0], "configs_per_s": 50.0},
            {"what": "measuring", "gpus": list(range(gpus)), "configs_per_s": 50.0 * speedup},
            {"what": "tune", "gpus": [0], "configs_per_s": 20.0, "build_wait_s": 1.5},
            {"what": "tune", "gpus": list(range(gpus)), "configs_per_s": 25.0, "build_wait_s": 2.5}]
    return {"benchmark": "scale-gpu", "device": "GPU X", "date": date, "workload": "w", "template": "t",
            "configs_sampled": 8, "rows": rows,
            "summary": {"gpus": gpus, "gpu2_throughput_speedup": speedup if gpus == 2 else None,
                        "gpu_all_throughput_speedup": speedup, "nvrtc_configs_per_s": 20.0,
                        "bars": {"gpu2_throughput_speedup": 1.8}}}


def test_block_lists_every_run_of_the_newest_day_and_judges_by_the_lowest(tmp_path):
    assert scale_block(tmp_path) is None
    for name, doc in [("scale-gpu-X-2026-01-02.json", gpu_doc(2.0)), ("scale-gpu-X-2026-01-02-2.json", gpu_doc(1.7)),
                      ("scale-gpu-X-2026-01-01.json", gpu_doc(1.2, date="2026-01-01"))]:
        (tmp_path / name).write_text(json.dumps(doc))
    block = scale_block(tmp_path)
    assert "| `scale-gpu-X-2026-01-02.json` | 20.0 | 50.0 | 100.0 | 2.000 | 20.0 | 25.0 | 1.5 / 2.5 |" in block
    assert "`scale-gpu-X-2026-01-02-2.json`" in block and "2026-01-01.json" not in block
    assert "`gpu2_throughput_speedup` 1.700 to 2.000 over 2 run(s) (bar >= 1.8: not met by the lowest)" in block
    assert "Ray runner" not in block


def test_ray_table_reports_the_killed_worker_run(tmp_path):
    ray = {"benchmark": "scale", "device": "cpu", "date": "2026-01-01",
           "rows": [{"runner": "ray replay actors", "actors": 2, "delay_ms": 20.0, "configs": 9, "configs_per_s": 3.0,
                     "speedup_vs_1_actor": 1.9},
                    {"runner": "killed", "actors": 4, "delay_ms": 20.0, "configs": 9, "configs_per_s": 2.5,
                     "lost": 0, "duplicates": 0}],
           "summary": {"ray_killed_worker_lost": 0, "ray_killed_worker_duplicates": 0, "ray_killed_worker_completed": True}}
    (tmp_path / "scale-cpu-2026-01-01.json").write_text(json.dumps(ray))
    block = scale_block(tmp_path)
    assert "| ray replay actors | 2 | 20 | 9 | 3.0 | 1.90 |  |  |" in block and "| killed | 4 | 20 | 9 | 2.5 | – | 0 | 0 |" in block
    assert "lost 0, written twice 0, completed True" in block and "Every GPU" not in block
