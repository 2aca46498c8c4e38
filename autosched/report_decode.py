"""Tables and plots of the decode benchmark (bench/results/decode-*.json), for the README block
`<!-- results:decode -->`: throughput per model and format beside the bandwidth limit, quantization
quality vs speed, matmuls (served vs default vs cuBLAS), attention vs SDPA, and the baselines.
(The SGEMM tables are in report_sgemm.py.)"""

from __future__ import annotations

from pathlib import Path

# matplotlib is imported inside functions: slow to import, and only a few functions need it


def _f(x, fmt="{:.1f}") -> str:
    return "–" if x is None or (isinstance(x, float) and x != x) else fmt.format(x)


def decode_tables(doc: dict) -> str:
    out = [f"**Decode engine**, {doc['device']}, {doc['date']}, commit `{str(doc.get('commit', ''))[:10]}` "
           f"(`{Path(doc['_path']).name}`; random weights at each model's shape; device-to-device copy "
           f"bandwidth measured in the same run: {_f(doc.get('copy_gbps'), '{:.0f}')} GB/s)", "",
           "| model | weights | tokens/s | us/token | weight MB read/token | bandwidth limit (tokens/s) | % of limit "
           "| KL vs fp32 |", "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in doc["rows"]:
        out.append(f"| {r['model']} | {r['format']} | {_f(r['tokens_per_s'])} | {_f(r['us_per_token'])} | "
                   f"{_f(r['weight_bytes'] / 1e6)} | {_f(r['bw_limit_tokens_per_s'], '{:.0f}')} | "
                   f"{_f(r['pct_of_bw_limit'])}% | {_f(r.get('kl_vs_fp32'), '{:.2e}')} |")
    pdl = [r for r in doc["rows"] if r.get("pdl_tokens_per_s")]
    if pdl:      # results from before programmatic launch was the default
        out += ["", "The q4f16_1 engine with programmatic dependent launch (`Engine(pdl=True)`: each matmul "
                    "prefetches its first weights into the L2 before waiting on its predecessor), tokens/s: " +
                ", ".join(f"{r['model']} {_f(r['pdl_tokens_per_s'])} (without: {_f(r['tokens_per_s'])})" for r in pdl)
                + "."]
    nopdl = [r for r in doc["rows"] if r.get("no_pdl_tokens_per_s")]
    if nopdl:
        out += ["", "The tokens/s above use programmatic dependent launch (each matmul prefetches its first "
                    "weights into the L2 before waiting on its predecessor); the q4f16_1 engine without it: " +
                ", ".join(f"{r['model']} {_f(r['no_pdl_tokens_per_s'])}" for r in nopdl) + "."]
    base = doc.get("baselines") or []
    if base:
        ours = {r["model"]: r["tokens_per_s"] for r in doc["rows"] if r["format"] == "q4f16_1"}
        ours16 = {r["model"]: r["tokens_per_s"] for r in doc["rows"] if r["format"] == "fp16"}
        out += ["", "| model | other implementation | tokens/s | ours fp16 / it | ours q4f16_1 / it |",
                "| --- | --- | --- | --- | --- |"]
        for b in base:
            t = b.get("tokens_per_s")
            if t is None:
                out.append(f"| {b['model']} | {b['impl']} | failed: {b.get('error', '')[:80]} | | |")
                continue
            r16 = ours16.get(b["model"])
            r4 = ours.get(b["model"])
            out.append(f"| {b['model']} | {b['impl']} | {_f(t)} | {_f(r16 / t if r16 else None, '{:.1f}x')} | "
                       f"{_f(r4 / t if r4 else None, '{:.1f}x')} |")
    mm = doc.get("matmul") or []
    if mm:
        out += ["", "7B q4f16_1 matmuls, one launch inside a CUDA graph over 8 layers' weights:", "",
                "| matmul | N x K | served (us) | GB/s | served, PDL + L2 prefetch (us) | GB/s | default config (us) "
                "| cuBLAS fp16 (us) | served config from |",
                "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
        for r in mm:
            out.append(f"| {r['matmul']} | {r['N']} x {r['K']} | {_f(r['served_us'], '{:.2f}')} | "
                       f"{_f(r['served_gbps'], '{:.0f}')} | {_f(r.get('served_pdl_us'), '{:.2f}')} | "
                       f"{_f(r.get('served_pdl_gbps'), '{:.0f}')} | {_f(r['default_us'], '{:.2f}')} | "
                       f"{_f(r['cublas_fp16_us'], '{:.2f}')} | {r['served_source']} |")
    att = doc.get("attention") or []
    if att:
        split_key = next(k for k in att[0] if k.startswith("ours_split"))
        out += ["", "Decode attention of one 7B layer (32 heads x 128, fp16 cache), us:", "",
                f"| context | ours, one block a head | ours, split-KV ({split_key[10:-3]} slices, as served) | torch SDPA |",
                "| --- | --- | --- | --- |"]
        for r in att:
            out.append(f"| {r['context']} | {_f(r['ours_us'], '{:.2f}')} | {_f(r[split_key], '{:.2f}')} | "
                       f"{_f(r['sdpa_us'], '{:.2f}')} |")
    hf = doc.get("hf_check")
    if hf and "max_abs_diff" in hf:
        out += ["", f"fp32 engine vs transformers LlamaForCausalLM (fp32, same weights, {hf['tokens']} positions): "
                    f"max |logit diff| {hf['max_abs_diff']:.2e} (max |logit| {hf['max_abs_logit']:.2f}), argmax equal "
                    f"at every position: {hf['argmax_equal']}, 32-token greedy continuation identical: "
                    f"{hf['greedy_identical']}."]
    return "\n".join(out)


def decode_plots(doc: dict, plot_dir: Path) -> list[Path]:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    plot_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    fig, ax = plt.subplots(figsize=(6.5, 4))
    for model in dict.fromkeys(r["model"] for r in doc["rows"]):
        rows = [r for r in doc["rows"] if r["model"] == model and r.get("kl_vs_fp32") is not None]
        xs = [r["tokens_per_s"] for r in rows]
        ys = [max(r["kl_vs_fp32"], 1e-9) for r in rows]
        ax.plot(xs, ys, "o-", label=model)
        for r, x, y in zip(rows, xs, ys):
            ax.annotate(r["format"], (x, y), textcoords="offset points", xytext=(4, 4), fontsize=7)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("tokens/s (batch 1)")
    ax.set_ylabel("KL(fp32 || format) per token")
    paths.append(_save(plt, fig, ax, f"Weight format: quality vs speed ({doc['device']})",
                       plot_dir / "decode-quality-speed.png"))
    att = doc.get("attention") or []
    if att:
        split_key = next(k for k in att[0] if k.startswith("ours_split"))
        fig, ax = plt.subplots(figsize=(6.5, 4))
        ctx = [r["context"] for r in att]
        for key, label in (("ours_us", "ours, one block a head"), (split_key, "ours, split-KV"),
                           ("sdpa_us", "torch SDPA")):
            ax.plot(ctx, [r[key] for r in att], "o-", label=label)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("context length")
        ax.set_ylabel("us per layer")
        paths.append(_save(plt, fig, ax, "Decode attention, 32 heads x 128, fp16", plot_dir / "decode-attention.png"))
    return paths


def _save(plt, fig, ax, title: str, path: Path) -> Path:
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
