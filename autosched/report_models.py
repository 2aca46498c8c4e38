"""The README's "models" block: dynamic-shape tuning (dynamic-*.json), configs for unseen shapes
(model-transfer-*.json) and whole-model tuning (model-tune-*.json), each table from the newest
results file of its benchmark (the whole-model table each row and figure from the newest run that
measured it), every figure beside its bar."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from autosched.results_files import all_results, cell, latest_results


def _geomean(xs) -> float | None:
    return float(np.exp(np.mean(np.log(xs)))) if xs else None


def _bar(v, bar, at_most=False, low=None) -> str:
    """`low`: the figure's lowest reading within its run; a figure whose range straddles the bar has
    not cleared it."""
    if v is None:
        return "not measured"
    if not (v <= bar if at_most else v >= bar):
        return "not met"
    return f"within its spread (low {low:.3f})" if low is not None and low < bar else "met"


def paired_range_m_le_256(rows: list) -> list | None:
    """[low, high]: the geomean at M <= 256 of each instance's lowest and highest paired round with
    cuBLAS (the spread of geomean_vs_cublas_m_le_256 within its run), or None where a row lacks the
    pairing (runs before 2026-11-27)."""
    pts = [p for r in rows for p in r["untuned"] if p["M"] <= 256]
    if not pts or not all((p.get("cublas_paired") or {}).get("vs_cublas_range") for p in pts):
        return None
    return [_geomean([p["cublas_paired"]["vs_cublas_range"][i] for p in pts]) for i in (0, 1)]


def series_ratio_m_le_256(rows: list) -> float | None:
    """The geomean at M <= 256 of cuBLAS / ours as each row also timed them, as two series of their own in
    the same process (cublas_paired["series"]): a second reading of the same kernels, or None where a
    row lacks it."""
    pts = [p for r in rows for p in r["untuned"] if p["M"] <= 256]
    series = [(p.get("cublas_paired") or {}).get("series") for p in pts]
    if not pts or not all(series):
        return None
    return _geomean([x["cublas_us"] / x["ours_us"] for x in series])


# how a run was split over device calls, not how it measured: never a reason to keep runs apart
_PROVENANCE_SETTINGS = ("resumed_rows",)


def _measuring_settings(summary: dict) -> dict:
    """A DietCode run's settings less its provenance (how many rows an earlier call finished)."""
    return {k: v for k, v in summary.get("settings", {}).items() if k not in _PROVENANCE_SETTINGS}


def dynamic_table(doc: dict, runs: list[dict] | None = None) -> str:
    """`runs`: every results file of the same device and date, `doc` among them: the summary keys'
    range over them is shown beside the newest's figures (the run-to-run spread)."""
    s = doc["summary"]
    bars = s.get("bars", {})
    out = [f"DietCode (`python -m autosched.benchmarks.dynamic`), {doc['device']}, {doc['date']} "
           f"(`{Path(doc.get('_path', '')).name}`; settings {s.get('settings', {})}):", "",
           "| workload | dynamic run (s) | 8 per-instance runs (s) | tuning-time ratio | untuned vs per-instance | "
           "vs cuBLAS, M <= 256 |", "| --- | --- | --- | --- | --- | --- |"]
    for r in doc["rows"]:
        per = [u for u in r["untuned"] if u.get("vs_per_instance")]
        small = [u["vs_cublas"] for u in r["untuned"] if u["M"] <= 256 and u.get("vs_cublas")]
        out.append(f"| `{r['shape']}` M {r['range'][0]}..{r['range'][1]} | {cell(r['dynamic_tune_s'], '{:.1f}')} | "
                   f"{cell(r['per_instance_tune_s'], '{:.1f}')} | {cell(r['tuning_time_speedup'])} | "
                   f"{cell(_geomean([u['vs_per_instance'] for u in per]), '{:.3f}')} | {cell(_geomean(small), '{:.3f}')} |")
    out += ["", "| summary key | measured | bar | |", "| --- | --- | --- | --- |"]
    spread = {"geomean_vs_cublas_m_le_256": (paired_range_m_le_256(doc["rows"]), series_ratio_m_le_256(doc["rows"]))}
    for k in ("tuning_time_speedup", "untuned_geomean_vs_per_instance", "geomean_vs_cublas_m_le_256"):
        lo_hi, series = spread.get(k, (None, None))
        notes = ([f"{lo_hi[0]:.3f} to {lo_hi[1]:.3f} over its paired rounds"] if lo_hi else []) + (
            [f"{series:.3f} as series"] if series is not None else [])
        shown = cell(s.get(k), '{:.3f}') + (f" ({'; '.join(notes)})" if notes else "")
        lows = [x for x in (lo_hi and lo_hi[0], series) if x is not None]
        out.append(f"| `{k}` | {shown} | >= {bars.get(k)} | {_bar(s.get(k), bars.get(k, 0), low=min(lows, default=None))} |")
    out.append(f"| `dispatcher_overhead_ns` | {cell(s.get('dispatcher_overhead_ns'), '{:.0f}')} | | |")
    if runs and len(runs) > 1:
        keys = ("tuning_time_speedup", "untuned_geomean_vs_per_instance", "geomean_vs_cublas_m_le_256")
        mine = _measuring_settings(s)
        same = [r for r in runs if _measuring_settings(r["summary"]) == mine]
        other = [r for r in runs if _measuring_settings(r["summary"]) != mine]
        if len(same) > 1:
            spread = []
            for k in keys:
                vs = [r["summary"][k] for r in same if r["summary"].get(k) is not None]
                if vs:
                    spread.append(f"`{k}` {min(vs):.3f} to {max(vs):.3f}")
            out += ["", f"Over the {len(same)} runs of this device, date and settings ("
                    + ", ".join(f"`{Path(r.get('_path', '')).name}`" for r in same) + "): " + "; ".join(spread) + "."]
        if other:
            # runs of the same day with other settings (quick, rounds, the row probe...): each on its own,
            # with what differs, never folded into the spread above
            parts = []
            for r in other:
                theirs = _measuring_settings(r["summary"])
                diff = ", ".join(f"{k} {theirs.get(k, 'not recorded')}" for k in sorted(set(mine) | set(theirs))
                                 if theirs.get(k) != mine.get(k))
                figs = ", ".join(f"{r['summary'][k]:.3f}" for k in keys if r["summary"].get(k) is not None)
                parts.append(f"`{Path(r.get('_path', '')).name}` ({diff or 'no settings recorded'}): {figs}")
            out += ["", "Other runs of this device and date, with other settings (" + ", ".join(keys) + "): "
                    + "; ".join(parts) + "."]
    return "\n".join(out)


def transfer_table(doc: dict) -> str:
    s = doc["summary"]
    out = [f"Configs for shapes no recording holds (`python -m autosched.benchmarks.transfer --gpu`), "
           f"{doc['device']}, {doc['date']}: each as a ratio to a 512-trial tuning of the same shape.", "",
           "| shape (N x K) | from | 512 trials (us) | zero-trial (predicted) | 32 trials | rule-based default |",
           "| --- | --- | --- | --- | --- | --- |"]
    for r in doc["rows"]:
        out.append(f"| {r['N']}x{r['K']} | {r.get('model', '')} | {cell(r.get('trials512_us'))} | "
                   f"{cell(r.get('zero_trial_vs_512'), '{:.3f}')} | {cell(r.get('trials32_vs_512'), '{:.3f}')} | "
                   f"{cell(r.get('default_vs_512'), '{:.3f}')} |")
    out.append(f"| **geomean ({s.get('shapes')} shapes)** | | | **{cell(s.get('zero_trial_geomean'), '{:.3f}')}** "
               f"(bar >= 0.87: {_bar(s.get('zero_trial_geomean'), 0.87)}) | **{cell(s.get('trials32_geomean'), '{:.3f}')}** "
               f"(bar >= 0.95: {_bar(s.get('trials32_geomean'), 0.95)}) | {cell(s.get('default_geomean'), '{:.3f}')} |")
    return "\n".join(out)


def _range(r, rounds: int = 0) -> str:
    """' (lo-hi over N rounds)' after a median share, where the row or summary has its range."""
    if not r:
        return ""
    return f" ({r[0]:.1f}-{r[1]:.1f}{f' over {rounds} rounds' if rounds else ''})"


_MODEL_KEYS = ("tune_model_1b_minutes", "pct_of_bw_limit_1b_fp16", "pct_of_bw_limit_1b_q4",
               "pct_of_bw_limit_7b_q4_as_shipped")


def model_tune_table(doc: dict, docs: list | None = None) -> str:
    """The whole-model table of `doc`; given `docs` (every run, newest first), each row (model, format,
    phase) and each summary key of `doc`'s device from the newest run that measured it, the run named
    beside it: a later call that re-reads one model (the 7B as shipped) then stands in the table beside
    the rows it did not measure, instead of hiding them or staying out of the table."""
    runs = [d for d in (docs or [doc]) if d.get("device") == doc.get("device")] or [doc]
    key = lambda r: (r["model"], r["format"], r["phase"])  # noqa: E731
    rows, figures = {}, {}
    for d in runs:
        for r in d["rows"]:
            rows.setdefault(key(r), (r, d))
        for k in _MODEL_KEYS:
            if d["summary"].get(k) is not None:
                figures.setdefault(k, d)
    # the rows in the order of the run that measured the most of them
    fullest = max(runs, key=lambda d: len(d["rows"]))
    order = [key(r) for r in fullest["rows"]]
    ordered = sorted(rows, key=lambda k: order.index(k) if k in order else len(order))
    used = {id(d): d for _, d in rows.values()} | {id(d): d for d in figures.values()}
    named = len(used) > 1
    run = lambda d: f" `{Path(d.get('_path', '')).name}` |" if named else ""  # noqa: E731
    dates = ", ".join(sorted({d.get("date", "") for d in used.values()}))
    out = [f"Whole models (`python -m autosched.benchmarks.model_tune`), {doc['device']}, {dates}: decode "
           "tokens/s at batch 1 against the weight-bandwidth limit (weight bytes a step reads over the "
           "device-to-device copy bandwidth of the same run; where a row has rounds, its median round, each "
           "round's bandwidth measured right before it, and the rounds' range)"
           + ("; each row and figure from the newest run that measured it." if named else "."), "",
           "| model | format | when | tokens/s | limit | % of limit |" + (" run |" if named else ""),
           "| --- | --- | --- | --- | --- | --- |" + (" --- |" if named else "")]
    for k in ordered:
        r, d = rows[k]
        out.append(f"| `{r['model']}` | {r['format']} | {r['phase']} | {cell(r['tokens_per_s'], '{:.0f}')} | "
                   f"{cell(r['bw_limit_tokens_per_s'], '{:.0f}')} | {cell(r['pct_of_bw_limit'], '{:.1f}')}"
                   f"{_range(r.get('pct_range'), len(r.get('rounds', [])))} |{run(d)}")
    out += ["", "| summary key | measured | bar | |" + (" run |" if named else ""),
            "| --- | --- | --- | --- |" + (" --- |" if named else "")]
    for k in _MODEL_KEYS:
        d = figures.get(k, doc)
        s = d["summary"]
        bar = s.get("bars", {}).get(k, doc["summary"].get("bars", {}).get(k))
        at_most = k == "tune_model_1b_minutes"
        out.append(f"| `{k}` | {cell(s.get(k), '{:.2f}')}{_range(s.get(k + '_range'))} | "
                   f"{'<=' if at_most else '>='} {bar} | {_bar(s.get(k), bar or 0, at_most)} |"
                   + (run(d) if k in figures else (" |" if named else "")))
    return "\n".join(out)


def models_block(results_dir: Path) -> str | None:
    """The block's text from the newest file of each benchmark; None when none of them has run."""
    parts = []
    for name, table in (("dynamic", dynamic_table), ("model-transfer", transfer_table), ("model-tune", model_tune_table)):
        doc = latest_results(Path(results_dir), name)
        if doc is None:
            continue
        if name == "dynamic":
            # one table per GPU model measured on the newest date (their settings may differ: each says)
            day = [d for d in all_results(Path(results_dir), name) if d.get("date") == doc.get("date")]
            for device in dict.fromkeys(d.get("device") for d in day):
                same = [d for d in day if d.get("device") == device]
                parts.append(table(same[0], same))
        elif name == "model-tune":
            parts.append(table(doc, all_results(Path(results_dir), name)))
        else:
            parts.append(table(doc))
    return "\n\n".join(parts) if parts else None
