"""The README's "scale" block: tuning on every GPU of a host (scale-gpu-*.json: every run of the newest
device and date, so the run-to-run spread shows beside the bar) and the Ray runner on the CPU
(scale-*.json, the newest)."""

from __future__ import annotations

from pathlib import Path

from autosched.results_files import all_results, cell, latest_results


def _rate(doc: dict, what: str, gpus: int):
    return next((r for r in doc["rows"] if r["what"] == what and len(r["gpus"]) == gpus), None)


def gpu_table(runs: list[dict]) -> str:
    """`runs`: the scale-gpu files of one device and date, newest first."""
    doc = runs[0]
    bar = doc["summary"].get("bars", {}).get("gpu2_throughput_speedup")
    out = [f"Every GPU of one host (`python -m autosched.benchmarks.scale_gpu`), {doc['device']} x "
           f"{doc['summary']['gpus']}, {doc['date']}: {doc.get('configs_sampled', '?')} configs of "
           f"`{doc.get('workload', '?')}` ({doc.get('template', '?')}), prebuilt, measured on GPU 0 alone and "
           f"on all GPUs; then `tune` end to end (builds running ahead) on each.", "",
           "| run | NVRTC (configs/s) | measuring, 1 GPU | all GPUs | speedup | tune, 1 GPU | all GPUs | "
           "GPUs waited on builds (s) |", "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for d in runs:
        n = d["summary"]["gpus"]
        m1, mn, t1, tn = _rate(d, "measuring", 1), _rate(d, "measuring", n), _rate(d, "tune", 1), _rate(d, "tune", n)
        cps = lambda r: cell(r["configs_per_s"], "{:.1f}") if r else "–"  # noqa: E731
        out.append(f"| `{Path(d.get('_path', '')).name}` | {cell(d['summary'].get('nvrtc_configs_per_s'), '{:.1f}')} | "
                   f"{cps(m1)} | {cps(mn)} | {cell(d['summary'].get('gpu_all_throughput_speedup'), '{:.3f}')} | "
                   f"{cps(t1)} | {cps(tn)} | {cell(t1 and t1.get('build_wait_s'), '{:.1f}')} / "
                   f"{cell(tn and tn.get('build_wait_s'), '{:.1f}')} |")
    vs = [d["summary"]["gpu2_throughput_speedup"] for d in runs if d["summary"].get("gpu2_throughput_speedup")]
    if vs and bar:
        verdict = "met" if min(vs) >= bar else "not met"
        out += ["", f"`gpu2_throughput_speedup` {min(vs):.3f} to {max(vs):.3f} over {len(vs)} run(s) "
                f"(bar >= {bar}: {verdict} by the lowest)."]
    return "\n".join(out)


def ray_table(doc: dict) -> str:
    s = doc["summary"]
    out = [f"The Ray runner on the CPU (`python -m autosched.benchmarks.scale`), {doc['date']}: replay actors "
           f"(a fixed delay per config stands in for a GPU's measuring time).", "",
           "| runner | actors | delay (ms) | configs | configs/s | vs 1 actor | lost | duplicates |",
           "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in doc["rows"]:
        out.append(f"| {r['runner']} | {r['actors']} | {cell(r['delay_ms'], '{:.0f}')} | {r['configs']} | "
                   f"{cell(r['configs_per_s'], '{:.1f}')} | {cell(r.get('speedup_vs_1_actor'))} | "
                   f"{r.get('lost', '')} | {r.get('duplicates', '')} |")
    out += ["", f"Killed-worker run: lost {s.get('ray_killed_worker_lost')}, written twice "
            f"{s.get('ray_killed_worker_duplicates')}, completed {s.get('ray_killed_worker_completed')}."]
    return "\n".join(out)


def scale_block(results_dir: Path) -> str | None:
    parts = []
    newest = latest_results(Path(results_dir), "scale-gpu")
    if newest is not None:
        same = [d for d in all_results(Path(results_dir), "scale-gpu")
                if (d.get("device"), d.get("date")) == (newest.get("device"), newest.get("date"))]
        parts.append(gpu_table(same))
    ray = latest_results(Path(results_dir), "scale")
    if ray is not None:
        parts.append(ray_table(ray))
    return "\n\n".join(parts) if parts else None
