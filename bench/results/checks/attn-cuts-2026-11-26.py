"""Device experiment: where the decode attention kernel's time goes in the step, by cutting it short
(wrong outputs, right timing) at points after its dependency wait; 7B dims, 8 layers, q4f16_1."""
import dataclasses, json, sys, tempfile
from pathlib import Path
import torch
import autosched.templates.decode as td
from autosched import api
from autosched.benchmarks.decode import PROMPT, copy_bandwidth_gbps
from autosched.database import Database
from autosched.engine.engine import Engine
from autosched.engine.kernel_timeline import format_table, reduce, split_steps
from autosched.engine.weights import random_weights_torch
sys.path.insert(0, "scripts")  # run from the repository root, at commit 2128c23 (the block-wide attention these anchors cut)
from step_timeline import kernel_events, timed_steps

KEEP = "if ({v} == 1234.5f) out[0] = from_f<T>(0.f);"
POINTS = {  # (anchor, text inserted after it): a cut keeps everything before it alive through `out`
    1: ("  wait();\n", "  if (true) { if (pos_p[0] == -7) out[0] = from_f<T>(0.f); return; }\n"),
    2: ("i < head_size; i += THREADS) vs[i] = to_f(from_f<T>(to_f(qkv[q_dim + kv_dim + kv_off + i])));\n  __syncthreads();\n",
        "  if (true) { " + KEEP.format(v="qs[threadIdx.x % head_size] + ks[threadIdx.x % head_size] + vs[threadIdx.x % head_size]") + " return; }\n"),
    3: ("  m = block_max<THREADS>(m, red);      // its barrier also publishes the scores\n",
        "  if (true) { " + KEEP.format(v="m") + " return; }\n"),
    4: ("  sum = block_sum<THREADS>(sum, red);\n  __syncthreads();\n",
        "  if (true) { " + KEEP.format(v="sum") + " return; }\n"),
    5: ("#pragma unroll\n    for (int e = 0; e < E; ++e) red[g * head_size + c * E + e] = acc[e];\n  }\n  __syncthreads();\n",
        "  if (true) { " + KEEP.format(v="red[threadIdx.x]") + " return; }\n"),
}
orig = td.kernel_source

def patched(cut, nolaunch):
    def ks(name, *a):
        s = orig(name, *a)
        if name != td.HEADER:
            return s
        if cut:
            anchor, text = POINTS[cut]
            assert s.count(anchor) == 1, cut
            s = s.replace(anchor, anchor + text, 1)
        if nolaunch:
            s = s.replace("  grid_dependents_launch();\n  attention_item<", "  attention_item<", 1)
        return s
    return ks

def main():
    cfg = dataclasses.replace(api.model_config("random:llama2-7b"), n_layers=int(sys.argv[1]) if len(sys.argv) > 1 else 8)
    bw = copy_bandwidth_gbps(torch)
    w = random_weights_torch(cfg, 1234, "cuda")
    res = {}
    out = Path(sys.argv[2]) if len(sys.argv) > 2 else Path(".")
    for cut, nolaunch in [(0, False), (1, False), (2, False), (3, False), (4, False), (5, False)]:
        td.kernel_source = patched(cut, nolaunch)
        with tempfile.TemporaryDirectory() as tmp, Database(Path(tmp) / "x.db") as db:
            eng = Engine(cfg, w, "q4f16_1", db=db, reverify=True, batched_prefill=False)
        eng.reset()
        for t in PROMPT:
            eng.step(t)
        eng.decode(4); torch.cuda.synchronize()
        plain = timed_steps(eng, 48)
        from torch.profiler import ProfilerActivity, profile
        with tempfile.TemporaryDirectory() as tmp:
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                timed_steps(eng, 48)
            prof.export_chrome_trace(f"{tmp}/t.json")
            ev = kernel_events(Path(f"{tmp}/t.json"))
        floors = {n: m.nbytes(0) / (bw * 1e3) for n, m in eng.mm.items()}
        t = reduce(split_steps(ev, eng.kernels_per_step()), cfg.n_layers, floors)
        key = f"cut{cut}" + ("-nolaunch" if nolaunch else "")
        print(f"== {key}: step {plain:.1f} us plain", flush=True)
        print("\n".join(format_table(t)), flush=True)
        res[key] = {"step_us_plain": plain, "table": t}
        del eng; torch.cuda.empty_cache()
    (out / "attn-cuts.json").write_text(json.dumps({"layers": cfg.n_layers, "copy_gbps": bw, "runs": res}, indent=1))


if __name__ == '__main__':
    main()
