"""README blocks of the GEMMs: `<!-- results:sgemm -->` and `<!-- results:hgemm -->` (tuned vs
cuBLAS, from bench/results/sgemm-*.json and hgemm-*.json) and `<!-- results:search -->` (the
search-efficiency study, from bench/results/search-efficiency-*.json)."""

from __future__ import annotations

from pathlib import Path

from autosched.results_files import latest_results, replace_block


def cell(x, fmt="{:.1f}") -> str:
    return "–" if x is None or x != x else fmt.format(x)


_TITLES = {"sgemm": ("FP32 SGEMM", "cuBLAS with TF32 off"),
           "hgemm": ("FP16 GEMM on tensor cores", "cuBLAS FP16 with FP32 accumulation")}


def sgemm_table(doc: dict) -> str:
    """The table of a GEMM benchmark run (`bench sgemm` or `bench hgemm`)."""
    title, baseline = _TITLES.get(doc.get("benchmark", "sgemm"), _TITLES["sgemm"])
    out = [f"**{title}**, {doc['device']}, {doc['date']}, commit `{str(doc.get('commit', ''))[:10]}` "
           f"(`{Path(doc['_path']).name}`; {baseline}; every kernel checked against float64 first)", "",
           "| M x N x K | tuned (us) | TFLOP/s | default (us) | cuBLAS (us) | % of cuBLAS | "
           "% of cuBLAS, torch's memory | configs measured |",
           "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in doc["rows"]:
        # runs before the shared-buffer protocol have no "torch_memory"
        tm = r.get("torch_memory", {}).get("pct_of_cublas")
        shape = f"{r['M']} x {r['N']} x {r['K']}" + (", B (N, K)" if str(r.get("shape", "")).endswith("_bt") else "")
        out.append(f"| {shape} | {cell(r.get('tuned_us'), '{:.2f}')} | "
                   f"{cell(r.get('tuned_tflops'), '{:.1f}')} | {cell(r.get('default_us'), '{:.2f}')} | "
                   f"{cell(r.get('cublas_us'), '{:.2f}')} | {cell(r.get('pct_of_cublas'))}% | {cell(tm)}{'%' if tm else ''} | "
                   f"{r.get('trials', '–')} |")
    if any("torch_memory" in r for r in doc["rows"]):
        out += ["", "Our kernel and cuBLAS read the same A and B and write the same C, allocated from the memory "
                    "pool the tuner measures in. The column beside it times both again on torch's caching-allocator "
                    "memory."]
    return "\n".join(out)


def _budget(doc: dict) -> str:
    """The study's trial budget: a fraction of each space (the rows' budgets differ), or one count."""
    frac = doc.get("summary", {}).get("trial_fraction_budget")
    if frac:
        return f" of {100 * frac:g}% of each space"
    trials = {r["trials"] for r in doc["rows"]}
    return f" of {trials.pop()} trials" if len(trials) == 1 else ""


def search_table(doc: dict) -> str:
    """Per recorded shape and strategy: trials (and fraction of the space) to come within 5% of the
    exhaustive optimum, per seed and as the median."""
    out = [f"**Search efficiency**, {doc['device']}, {doc['date']} (`{Path(doc['_path']).name}`): replays of "
           "whole-space recordings, so every strategy sees the same real measurements and the recording's "
           "best is the exhaustive optimum. Trials to reach within 5% of it, per seed (– : not within the "
           f"budget{_budget(doc)}).", "",
           "| shape | space (within 5% / 1% of the optimum) | optimum (us) | strategy | trials to 5%, per seed | "
           "median, % of the space | trials to 1%, per seed | median, % of the space |",
           "| --- | --- | --- | --- | --- | --- | --- | --- |"]

    def pct(frac):
        return "not within the budget" if frac is None else f"{100 * frac:.1f}%"

    def seeds(reach):
        return ", ".join("–" if t is None else str(t) for t in reach or [])

    for r in doc["rows"]:
        near = f" ({r['configs_within_5pct']:,} / {r['configs_within_1pct']:,})" if "configs_within_5pct" in r else ""
        for name, s in r["strategies"].items():
            out.append(f"| {r['workload']} | {r['recorded']:,}{near} | {r['optimum_us']:.2f} | {name} | "
                       f"{seeds(s['trials_within_5pct'])} | {pct(s['median_fraction_within_5pct'])} | "
                       f"{seeds(s.get('trials_within_1pct'))} | "
                       f"{pct(s['median_fraction_within_1pct']) if 'median_fraction_within_1pct' in s else '–'} |")
    s = doc.get("summary", {})
    if "trials_fraction_within_5pct" in s:
        frac = s["trials_fraction_within_5pct"]
        shown = "not within the budget" if frac is None else f"{100 * frac:.1f}%"
        out += ["", f"Model-guided (evolutionary-model), median over shapes of the median over seeds: "
                    f"**{shown}** of the trials exhaustive search needs (bar: ≤ 10%)."]
    return "\n".join(out)


def gemm_section(results_dir, readme, plot_dir, console, name: str) -> list:
    """The newest GEMM results of benchmark `name` (sgemm, hgemm) into the README block `name`."""
    doc = latest_results(results_dir, name)
    if doc is None or readme is None:
        return []
    readme.write_text(replace_block(readme.read_text(), name, sgemm_table(doc)))
    return []


_LAYOUT_NOTE = {"nn": "", "nt": ", B (N, K)", "tn": ", A (K, M)", "tt": ", A (K, M), B (N, K)", "bb": ", blocked"}


def _hgemm_shape(r: dict) -> str:
    return (f"{r['M']} x {r['N']} x {r['K']}{_LAYOUT_NOTE.get(r.get('layout', 'nn'), '')}"
            + (" BF16" if r.get("dtype") == "bf16" else ""))


def hgemm_tables(doc: dict) -> str:
    """`bench hgemm`'s run: the bars' figures, then one table per template (tuned time, TFLOP/s and
    % of cuBLAS, the default's, cuBLAS's, the trials and tuning seconds behind it)."""
    rows = doc["rows"]
    s = doc.get("summary", {})
    fams = []
    for r in rows:
        fams += [f for f in r.get("templates", {}) if f not in fams]

    def pct(x):
        return f"{cell(x)}%" if x is not None else "–"
    out = [f"**FP16 / BF16 GEMM on tensor cores**, {doc['device']}, {doc['date']}, commit "
           f"`{str(doc.get('commit', ''))[:10]}` (`{Path(doc['_path']).name}`; cuBLAS through torch on the same "
           "buffers, FP32 accumulation; every kernel checked against float64 first; each template tuned on "
           "its own, its best configs re-timed here" + ("; % of cuBLAS of the fastest: the median of rounds alternating it "
                                                        "and cuBLAS, their range in brackets"
                                                        if any(t.get("paired") for r in rows
                                                               for t in r.get("templates", {}).values()) else "")
           + ")", "",
           f"Best template vs cuBLAS: 4096³ **{pct(s.get('best_pct_of_cublas_4096'))}**, 8192³ "
           f"**{pct(s.get('best_pct_of_cublas_8192'))}** (bar 95%); prefill, lowest "
           f"**{pct(s.get('min_pct_of_cublas_prefill'))}** (bar 90%); wmma at 4096³ "
           f"**{pct(s.get('wmma_pct_of_cublas_4096'))}** (bar 30%)."]
    for f in fams:
        out += ["", f"`{f}`", "",
                "| M x N x K | tuned (us) | TFLOP/s | % of cuBLAS | min-median spread | default (us) | "
                "default % | cuBLAS (us) | cuBLAS TFLOP/s | configs measured | tuning (s) |",
                "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
        for r in rows:
            t = r.get("templates", {}).get(f)
            if t is None:
                out.append(f"| {_hgemm_shape(r)} | not served | | | | | | {cell(r.get('cublas_us'), '{:.1f}')} | "
                           f"{cell(r.get('cublas_tflops'), '{:.0f}')} | | |")
                continue
            spread = t.get("min_median_spread_pct")
            pair = t.get("paired")      # alternated with cuBLAS: the median ratio, its range over the rounds
            share = pct(t.get("pct_of_cublas")) + (f" ({cell(pair['pct_min'])}-{cell(pair['pct_max'])})" if pair else "")
            out.append(f"| {_hgemm_shape(r)} | {cell(t.get('tuned_us'), '{:.1f}')} | {cell(t.get('tflops'), '{:.0f}')} | "
                       f"{share} | {cell(spread)}{'%' if spread is not None else ''} | "
                       f"{cell(t.get('default_us'), '{:.1f}')} | {pct(t.get('default_pct_of_cublas'))} | "
                       f"{cell(r.get('cublas_us'), '{:.1f}')} | {cell(r.get('cublas_tflops'), '{:.0f}')} | "
                       f"{t.get('trials', '–')} | {cell(t.get('tune_s'), '{:.0f}')} |")
    return "\n".join(out)


def hgemm_section(results_dir, readme, plot_dir, console, name: str) -> list:
    """The newest `bench hgemm` results into the README block `name`: a table per template, or the
    one-template table of a run from before the per-template benchmark."""
    doc = latest_results(results_dir, name)
    if doc is None or readme is None:
        return []
    per_template = any("templates" in r for r in doc["rows"])
    body = hgemm_tables(doc) if per_template else sgemm_table(doc)
    readme.write_text(replace_block(readme.read_text(), name, body))
    return []
