"""The README's "dataflow" block: the dataflow decode step against the per-kernel step, measured in
one process (dataflow-*.json of benchmark "dataflow", newest first: each model and format's
per-kernel rounds, its fastest knob choice's rounds, their ratio, the share of the weight-bandwidth
limit and the check against the per-kernel step's logits), and at a long context (benchmark
"dataflow-ctx")."""

from __future__ import annotations

from pathlib import Path

from autosched.results_files import all_results, cell


def _range(xs, fmt="{:.0f}") -> str:
    lo, hi = min(xs), max(xs)
    return fmt.format(lo) if fmt.format(lo) == fmt.format(hi) else f"{fmt.format(lo)}-{fmt.format(hi)}"


def ab_table(doc: dict) -> str:
    out = [f"`{Path(doc['_path']).name}` ({doc['device']}, {doc['date']}, copy bandwidth "
           f"{doc['copy_gbps']:.0f} GB/s in the same run):", "",
           "| model, format | per-kernel step (tok/s) | fastest dataflow choice | dataflow (tok/s) | ratio | "
           "% of the weight-bandwidth limit | logits vs per-kernel |", "| --- | --- | --- | --- | --- | --- | --- |"]
    for r in doc["rows"]:
        if not r.get("dataflow"):
            continue
        label, best = max(r["dataflow"].items(), key=lambda kv: max(kv[1]["tokens_per_s"]))
        k, d = r["kernels_tokens_per_s"], best["tokens_per_s"]
        out.append(f"| {r['model']} {r['format']} | {_range(k)} | {label.removeprefix('base ')} | {_range(d)} | "
                   f"{max(d) / max(k):.3f} | {100 * max(d) / r['bw_limit_tokens_per_s']:.1f}% | "
                   f"{cell(best.get('rel_err'), '{:.1e}')} |")
    return "\n".join(out)


def ctx_table(doc: dict) -> str:
    out = [f"At a long context (`{Path(doc['_path']).name}`, Llama-2-7B shape fp16, {doc['date']}): the KV "
           "cache's bytes count in the limit.", "",
           "| step | positions | tok/s | % of the limit |", "| --- | --- | --- | --- |"]
    for r in doc["rows"]:
        out.append(f"| {r['variant']} | {r['positions'][0]}-{r['positions'][1]} | {r['tokens_per_s']:.1f} | "
                   f"{r['pct_of_limit']:.1f}% |")
    return "\n".join(out)


def dataflow_block(results_dir: Path) -> str | None:
    """The block's text, or None where no dataflow results exist."""
    ab, ctx = all_results(results_dir, "dataflow"), all_results(results_dir, "dataflow-ctx", prefix="dataflow")
    if not ab and not ctx:
        return None
    parts = [ab_table(d) for d in ab] + ([ctx_table(ctx[0])] if ctx else [])
    return "\n\n".join(parts)
