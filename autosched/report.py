"""Tables and plots generated from bench/results/*.json (never typed in by hand).

`autosched report --readme README.md` rewrites the block between
`<!-- results:gemv-q4f16 -->` and `<!-- /results:gemv-q4f16 -->` in the README.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from autosched.registry import FAMILIES
from autosched.report_dataflow import dataflow_block
from autosched.report_decode import decode_plots, decode_tables
from autosched.report_models import models_block
from autosched.report_scale import scale_block
from autosched.report_sgemm import search_table
from autosched.results_files import all_results, cell, latest_results, replace_block

# matplotlib is imported inside functions: slow to import, and only a few functions need it

def gemv_table(doc: dict, expected: set | None = None) -> str:
    head = ("| N x K | MB | floor (us) | tuned (us) | tuned / floor | default (us) | tuned vs default "
            "| cuBLAS fp16 (us) | torch int4 (us) | graph: tuned / default / cuBLAS (us) | tuning (s, trials) |")
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for r in doc["rows"]:
        lines.append(
            f"| {r['N']} x {r['K']} | {r['bytes'] / 1e6:.1f} | {cell(r.get('floor_us'))} | {cell(r.get('tuned_us'))} "
            f"| {cell(r.get('time_over_floor'), '{:.3f}x')} | {cell(r.get('default_us'))} "
            f"| {cell(r.get('speedup_vs_default'), '{:.2f}x')} | {cell(r.get('cublas_fp16_us'))} "
            f"| {cell(r.get('tinygemm_us'))} | {cell(r.get('graph_tuned_us'))} / {cell(r.get('graph_default_us'))} / "
            f"{cell(r.get('graph_cublas_fp16_us'))} | {cell(r.get('tune_s'), '{:.0f}')}, {r.get('trials', '–')} |")
    s = doc.get("summary", {})
    lines.append("")
    tuning = doc.get("tuning", {})
    missing = s.get("shapes", len(doc["rows"])) - s.get("shapes_complete", len(doc["rows"]))
    have = {(r["N"], r["K"]) for r in doc["rows"]}
    planned = {tuple(x) for x in doc.get("shapes_planned", [])} | (expected or set())
    absent = sorted(planned - have)
    lines.append(f"{doc['device']}, {doc['date']}, commit `{doc.get('commit', '?')[:10]}`, "
                 f"file `{Path(doc['_path']).name}`, search `{tuning.get('strategy', '?')}`"
                 + (f", {missing} shape(s) without every figure" if missing else "")
                 + (f", no row for {', '.join(f'{n}x{k}' for n, k in absent)} (the run was cut short)"
                    if absent else "") + ". Worst tuned / floor: "
                 f"**{cell(s.get('max_time_over_floor'), '{:.3f}x')}** (bar: 1.15x); geomean speedup over the "
                 f"default config: **{cell(s.get('geomean_speedup_vs_default'), '{:.2f}x')}**.")
    return "\n".join(lines)


def gemv_plot(doc: dict, out: Path) -> Path:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    rows = doc["rows"]
    labels = [f"{r['N']}x{r['K']}" for r in rows]
    series = [("same-bytes floor", "floor_us"), ("tuned", "tuned_us"), ("default", "default_us"),
              ("cuBLAS fp16 (4x bytes)", "cublas_fp16_us"), ("torch int4", "tinygemm_us"),
              ("tuned in CUDA graph", "graph_tuned_us")]
    x = np.arange(len(rows))
    width = 0.8 / len(series)
    fig, ax = plt.subplots(figsize=(12, 5))
    for i, (name, key) in enumerate(series):
        # effective bandwidth of the q4 bytes: what the GEMV would need to move, over the time
        gbs = [r["bytes"] / (r[key] * 1e-6) / 1e9 if r.get(key) else 0 for r in rows]
        ax.bar(x + (i - len(series) / 2 + 0.5) * width, gbs, width, label=name)
    ax.set_xticks(x, labels, rotation=20)
    ax.set_ylabel("q4f16 bytes / time (GB/s)")
    ax.set_title(f"q4f16_1 dequantize-GEMV on {doc['device']} ({doc['date']}): effective bandwidth")
    ax.legend(fontsize=8, ncols=3)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return out


def write_report(results_dir: Path, readme: Path | None = None, plot_dir: Path = Path("bench/plots"),
                 console=None, runs: int = 2) -> list[Path]:
    """Every section of the report: one per operator family of the registry that has a report (its
    README block is named after the family's results prefix), then the decode engine's and the
    search study's."""
    if not any(Path(results_dir).glob("*.json")):
        raise FileNotFoundError(f"no results files (*.json) under {results_dir}: `autosched bench` writes them")
    written = []
    for fam in FAMILIES.values():
        if fam.report_section:
            written += fam.report_fn()(results_dir, readme, plot_dir, console, fam.report)
    written += write_decode_report(results_dir, readme, plot_dir, console)
    doc = latest_results(results_dir, "search-efficiency")
    if doc is not None and readme is not None:
        readme.write_text(replace_block(readme.read_text(), "search", search_table(doc)))
    block = models_block(Path(results_dir))
    if block is not None and readme is not None:
        readme.write_text(replace_block(readme.read_text(), "models", block))
    block = scale_block(Path(results_dir))
    if block is not None and readme is not None:
        readme.write_text(replace_block(readme.read_text(), "scale", block))
    block = dataflow_block(Path(results_dir))
    if block is not None and readme is not None:
        readme.write_text(replace_block(readme.read_text(), "dataflow", block))
    return written


def gemv_section(results_dir: Path, readme: Path | None, plot_dir: Path, console, name: str,
                 runs: int = 2) -> list[Path]:
    """Tables of the `runs` newest GEMV results files (newest first) and a plot of the newest that
    has every shape (a run cut short by a time limit shows in the table, not in the plot)."""
    written = []
    docs = all_results(results_dir, name)
    if not docs:            # a family not benchmarked yet: its README block stays as it is
        return written
    expected = {(r["N"], r["K"]) for d in docs for r in d["rows"]}
    table = "\n\n".join(gemv_table(d, expected) for d in docs[:runs])
    if console:
        console.print(table)

    def complete(d):
        s = d.get("summary", {})
        return s.get("shapes_complete", len(d["rows"])) == s.get("shapes", len(d["rows"]))
    widest = max(len(d["rows"]) for d in docs)
    doc = next((d for d in docs if complete(d) and len(d["rows"]) == widest), docs[0])
    plot = gemv_plot(doc, Path(plot_dir) / f"{name}-bandwidth.png")
    written.append(plot)
    if readme:
        rel = Path(os.path.relpath(Path(plot).resolve(), readme.resolve().parent)).as_posix()
        body = table + f"\n\nPlot (from `{Path(doc['_path']).name}`):\n\n![q4f16_1 GEMV bandwidth]({rel})"
        readme.write_text(replace_block(readme.read_text(), name, body))
        written.append(readme)
    return written


def write_decode_report(results_dir: Path, readme: Path | None, plot_dir: Path, console=None) -> list[Path]:
    """The newest decode results: tables into the README's decode block, plots under plot_dir."""
    doc = latest_results(results_dir, "decode")
    if doc is None:
        return []
    table = decode_tables(doc)
    if console:
        console.print(table)
    plots = decode_plots(doc, Path(plot_dir))
    if readme is None:
        return plots
    links = "\n\n".join(f"![{p.stem}]({Path(os.path.relpath(p.resolve(), readme.resolve().parent)).as_posix()})"
                         for p in plots)
    readme.write_text(replace_block(readme.read_text(), "decode", table + "\n\n" + links))
    return plots + [readme]
