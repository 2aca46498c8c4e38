"""Knowledge that transfers: how good is a shape's config before it is tuned, and after 32 trials?

For a shape, three figures beside a 512-trial tuning of it (`trials` configurable):
  zero-trial   the config the cost model of every *other* shape measured on this GPU model predicts
               fastest (search/transfer.py: the selection chain's "predicted" source), measured;
  32 trials    the best of a model-guided search warm-started from those other shapes;
  512 trials   the best of the same search given 512.
Each is reported as a speed ratio to the 512-trial best (t512 / t), so 1.0 is "as good as tuning".

Two modes:

  --replay (CPU, no GPU): leave-one-shape-out over the shipped GEMV recordings.  Hold one recording
      out, learn from the others, and answer every "measurement" of the held-out shape from its own
      recording.  A recording holds the configs earlier GPU runs measured (64 to ~940 of a ~70,000
      config space, found by random then model-guided search), not the whole space: so the zero-trial
      pick is chosen among those recorded configs, a replayed search can only walk them, and "512
      trials" is every recorded config where a recording holds fewer.  The ratios are therefore
      optimistic next to a GPU run over the whole space; every result says so.
  --gpu: the 8 GEMV shapes of public model families below (no shipped recording holds them),
      measured on this GPU over the whole space.  On a GPU model with no recording of its own (an
      H200 beside the shipped H100 recordings) the transfer is across GPUs: the zero-trial model
      learns from every other GPU model's recordings with the GPU's device-query figures as columns,
      and the searches start from the nearest GPU's recordings.

    python -m autosched.benchmarks.transfer --replay      # bench/results/transfer-replay-loo-...json
    python -m autosched.benchmarks.transfer --gpu         # bench/results/model-transfer-<device>-...json
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import tempfile
import time
from pathlib import Path

from autosched.benchmarks.common import git_commit
from autosched.build import Builder
from autosched.database import Database
from autosched.measure.recording import ReplayRunner, load_shipped
from autosched.search.transfer import across_gpus, rank_across, rank_configs, recorded_samples, recordings_of
from autosched.templates import GemvQ4F16Template
from autosched.tuner import measure_configs, versions
from autosched.workloads import GemvQ4F16, workload_from_key

# fit, tune and GpuRunner are imported inside functions: looked up at call time, as tests replace them on
# their modules

# (N, K, where the shape comes from): GEMV shapes of public models that no shipped recording holds
UNSEEN_SHAPES = (
    (6144, 4096, "Mistral-7B / Llama-3-8B qkv (32 heads, 8 kv)"),
    (28672, 4096, "Mistral-7B / Llama-3-8B gate+up"),
    (4608, 3584, "Qwen2-7B qkv (28 heads, 4 kv)"),
    (3584, 18944, "Qwen2-7B down"),
    (9216, 3072, "Phi-3-mini qkv"),
    (3072, 8192, "Phi-3-mini down"),
    (32768, 2048, "Gemma-2B gate+up"),
    (2048, 8192, "Llama-3.2-1B down"),
)
TRIALS = (32, 512)


def geomean(xs) -> float | None:
    xs = [x for x in xs if x is not None and x > 0 and math.isfinite(x)]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def zero_trial(w, template, device, samples, configs: list[dict]) -> tuple[dict | None, float | None]:
    """(the config of `configs` the model of `samples` predicts fastest on `w`, its predicted us);
    (None, None) where the samples are too few to fit."""
    from autosched.search.transfer import fit
    model = fit(samples, template, device, template.space(w, device))
    if model is None:
        return None, None
    [(cfg, us)] = rank_configs(model, w, configs, 1)
    return cfg, us


def zero_trial_across(w, template, device, recordings, configs: list[dict]) -> tuple[dict | None, float | None]:
    """zero_trial for a GPU with no recording of its own: the model of every other GPU model's
    `recordings`, the GPU's device-query figures as columns (search/transfer.py rank_across)."""
    samples, devices = across_gpus(template, device, recordings, exclude=(w.key,))
    top = rank_across(samples, devices, template, w, device, configs, 1) if devices else []
    return top[0] if top else (None, None)


def tuned_best(w, template, runner, recordings, trials: int, seed: int = 0, builder=None) -> tuple[float | None, int]:
    """(best median us, trials run) of a model-guided search of `trials` configs from a fresh
    database (nothing of this shape known), learning from `recordings` of the other shapes."""
    from autosched.tuner import tune
    with tempfile.TemporaryDirectory() as d, Database(Path(d) / "db") as db:
        res = tune(w, template, runner, db, strategy="model", trials=trials, seed=seed, recordings=recordings,
                   builder=builder)
    return (res.best.median_us if res.best else None), res.trials


def evaluate(w, template, runner, others: list, configs: list[dict], trials=TRIALS, seed: int = 0,
             measure=None, builder=None, across: bool = False) -> dict:
    """One shape's row.  others: Recordings of the other shapes (what is known); configs: where the
    zero-trial pick is chosen (a replay: the recorded ones; a GPU: the whole space); measure(cfg) ->
    us of one config (default: through `runner`); across: `others` are other GPU models' (the
    zero-trial pick from zero_trial_across, the searches warm-started from the nearest GPU's)."""
    device = runner.device_info

    def us(cfg):
        if measure is not None:
            return measure(cfg)
        [m] = measure_configs(w, template, runner, [cfg], builder)
        if not m.ok:
            failed.append(f"{m.status}: {str(getattr(m, 'error', '') or '')[:200]}")
        return m.median_us if m.ok else None

    failed: list[str] = []

    t0 = time.perf_counter()
    row = {"N": w.N, "K": w.K, "workload": w.key, "shapes_learned_from": len(others)}
    cfg, pred = (zero_trial_across(w, template, device, others, configs) if across
                 else zero_trial(w, template, device, recorded_samples(others), configs))
    row["zero_trial_config"], row["zero_trial_predicted_us"] = cfg, pred
    row["zero_trial_us"] = us(cfg) if cfg is not None else None
    row["default_us"] = us(template.default_config(w, device))
    for n in trials:
        row[f"trials{n}_us"], row[f"trials{n}_ran"] = tuned_best(w, template, runner, others, n, seed, builder)
    top = row[f"trials{max(trials)}_us"]
    if failed:
        row["failed"] = failed
    if top is None:       # no config measured: say so, a row of n/a would hide why
        row["error"] = f"no config of the {max(trials)}-trial search measured ok" + (f" ({failed[0]})" if failed else "")
    for name in ("zero_trial", "default", *(f"trials{n}" for n in trials)):
        t = row[f"{name}_us"]
        row[f"{name}_vs_{max(trials)}"] = top / t if (top and t) else None
    row["seconds"] = round(time.perf_counter() - t0, 1)
    return row


def leave_one_out(recordings: list, template, trials=TRIALS, seed: int = 0, on_row=None) -> list[dict]:
    """A row per recording: held out, learned about from the others, replayed from its own."""
    rows = []
    for held in recordings:
        w = workload_from_key(held.workload_key)
        others = [r for r in recordings if r is not held]
        configs = [c for c, m in held.entries.values()]
        row = evaluate(w, template, ReplayRunner(held), others, configs, trials, seed)
        best = held.best()
        row["recorded_configs"] = len(held.entries)
        row["recording_best_us"] = best[1].median_us if best else None
        row["zero_trial_vs_recording_best"] = (row["recording_best_us"] / row["zero_trial_us"]
                                               if best and row["zero_trial_us"] else None)
        rows.append(row)
        if on_row:
            on_row(row)
    return rows


def summary(rows: list[dict], trials=TRIALS) -> dict:
    top = max(trials)
    out = {"zero_trial_geomean": geomean(r["zero_trial_vs_%d" % top] for r in rows),
           "default_geomean": geomean(r["default_vs_%d" % top] for r in rows),
           "shapes": len(rows)}
    for n in trials:
        if n != top:
            out[f"trials{n}_geomean"] = geomean(r[f"trials{n}_vs_{top}"] for r in rows)
    if any("zero_trial_vs_recording_best" in r for r in rows):
        out["zero_trial_vs_recording_best_geomean"] = geomean(r.get("zero_trial_vs_recording_best") for r in rows)
    return {k: (round(v, 4) if isinstance(v, float) else v) for k, v in out.items()}


def _doc(benchmark: str, device, rows, trials, mode: dict) -> dict:
    return {"benchmark": benchmark, "device": device.name, "device_key": device.key,
            "date": datetime.date.today().isoformat(), "commit": git_commit(),
            "versions": versions(mode["runner"]), **mode, "trials": list(trials), "rows": rows,
            "summary": summary(rows, trials)}


def run_replay(out_dir="bench/results", trials=TRIALS, seed: int = 0, on_row=None) -> Path:
    """Leave-one-shape-out over the shipped GEMV recordings on this CPU; writes the results JSON."""
    t = GemvQ4F16Template()
    recs = [r for _, r in load_shipped() if r.template == t.family]
    keys = {r.device.key for r in recs}
    if len(keys) != 1:
        raise ValueError(f"the GEMV recordings are of {len(keys)} device keys; leave-one-out needs one")
    rows = leave_one_out(recs, t, trials, seed, on_row)
    doc = _doc("transfer-replay-loo", recs[0].device, rows, trials, {
        "runner": "replay", "machine": "CPU (no GPU: replayed measurements)",
        "method": "leave-one-shape-out over the shipped GEMV recordings: each shape held out, the model "
                  "learned from the others, the held-out shape answered from its own recording",
        "caveat": "a recording holds 64-942 configs that earlier GPU searches measured, not the whole space: "
                  "the zero-trial pick is chosen among those and a replayed search walks only them (\"512 "
                  "trials\" is every recorded config where fewer are recorded); optimistic next to a GPU run"})
    return _write(doc, out_dir, f"transfer-replay-loo-cpu-{doc['date']}.json")


def merged_rows(rows: list[dict], earlier: dict | None, device_key: str, trials) -> list[dict]:
    """`rows` and the rows of an `earlier` results document of the same device key and trials whose
    shapes `rows` does not hold (a run cut short, finished by a second one)."""
    if not earlier:
        return rows
    if earlier.get("device_key") != device_key or list(earlier.get("trials", [])) != list(trials):
        raise ValueError(f"the earlier results are of {earlier.get('device_key')} with trials "
                         f"{earlier.get('trials')}, not {device_key} with {list(trials)}: not merged")
    have = {r["workload"] for r in rows}
    return [r for r in earlier["rows"] if r["workload"] not in have] + rows


def run_gpu(out_dir="bench/results", trials=TRIALS, seed: int = 0, shapes=UNSEEN_SHAPES, on_row=None,
            merge=None) -> Path:
    """The unseen shapes on this GPU: zero-trial, 32 and 512 trials, each over the whole space.
    merge: an earlier results file whose other shapes' rows join these."""
    from autosched.measure.gpu import GpuRunner
    t = GemvQ4F16Template()
    rows = []
    # the GPU runner launches compiled binaries: without a builder every config fails unmeasured
    with GpuRunner() as runner, Builder() as builder:
        device = runner.device_info
        others = recordings_of(device.key, t.family)
        # a GPU with no recording of its own: what every other GPU model recorded (cross-GPU transfer)
        across = not others
        if across:
            others = [r for _, r in load_shipped() if r.template == t.family and r.device.name != device.name]
        if not others:
            raise ValueError(f"no shipped GEMV recording of {device.name} or of any other GPU: nothing to transfer from")
        for n, k, source in shapes:
            w = GemvQ4F16(n, k)
            held = {r.workload_key for r in others}
            if w.key in held:
                raise ValueError(f"{w.key} is recorded: not an unseen shape")
            row = evaluate(w, t, runner, others, t.space(w, device).enumerate(), trials, seed, builder=builder,
                           across=across)
            row["model"] = source
            rows.append(row)
            if on_row:
                on_row(row)
            # a run cut short keeps the shapes it finished
            _write({"partial": True, "rows": rows}, out_dir, "model-transfer-partial.json")
    rows = merged_rows(rows, json.loads(Path(merge).read_text()) if merge else None, device.key, trials)
    learned = sorted({r.device.name for r in others})
    doc = _doc("model-transfer", device, rows, trials, {
        "runner": "gpu", "machine": device.name, "learned_from_gpus": learned, "across_gpus": across,
        "method": "8 GEMV shapes of public model families that no shipped recording holds; searches from a fresh "
                  "database; " + ("no recording of this GPU model: the zero-trial model learned from every other "
                                  f"GPU model's recordings ({', '.join(learned)}), the GPU's device-query figures "
                                  "as columns, the searches warm-started from the nearest GPU's" if across else
                                  "the model learned from every shipped recording of this device key")})
    path = _write(doc, out_dir, f"model-transfer-{device.name.replace(' ', '_')}-{doc['date']}.json")
    (Path(out_dir) / "model-transfer-partial.json").unlink(missing_ok=True)
    return path


def _write(doc: dict, out_dir, name: str) -> Path:
    path = Path(out_dir) / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=1) + "\n")
    return path


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m autosched.benchmarks.transfer", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    mode = p.add_mutually_exclusive_group(required=True)
    mode.add_argument("--replay", action="store_true", help="leave-one-shape-out over the shipped recordings (CPU)")
    mode.add_argument("--gpu", action="store_true", help="the 8 unseen shapes, measured on this GPU")
    p.add_argument("--out", default="bench/results")
    p.add_argument("--trials", default=",".join(map(str, TRIALS)), help="comma-separated (default 32,512)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--shapes", default=None, metavar="NxK,...",
                   help="--gpu: only these of the unseen shapes (a run cut short goes on with the rest; "
                        f"default all: {', '.join(f'{n}x{k}' for n, k, _ in UNSEEN_SHAPES)})")
    p.add_argument("--merge", default=None, metavar="RESULTS.json",
                   help="--gpu: a results file of an earlier run on this GPU model whose rows are kept beside "
                        "the new ones (the shapes measured again replace theirs)")
    a = p.parse_args(argv)
    trials = tuple(int(x) for x in a.trials.split(","))
    shapes = UNSEEN_SHAPES
    if a.shapes:
        want = [s.strip() for s in a.shapes.split(",") if s.strip()]
        known = {f"{n}x{k}": (n, k, src) for n, k, src in UNSEEN_SHAPES}
        bad = [s for s in want if s not in known]
        if bad:
            p.error(f"--shapes {', '.join(bad)}: not among the unseen shapes ({', '.join(known)})")
        shapes = tuple(known[s] for s in want)
    if (a.shapes or a.merge) and not a.gpu:
        p.error("--shapes and --merge are for --gpu")

    def show(r):
        top = max(trials)
        print(f"{r['N']}x{r['K']}: zero-trial {_f(r['zero_trial_vs_%d' % top])}, "
              + ", ".join(f"{n} trials {_f(r[f'trials{n}_vs_{top}'])}" for n in trials if n != top)
              + f", default {_f(r['default_vs_%d' % top])} of the {top}-trial speed ({r['seconds']} s)", flush=True)

    if a.replay:
        path = run_replay(a.out, trials, a.seed, on_row=show)
    else:
        path = run_gpu(a.out, trials, a.seed, shapes=shapes, on_row=show, merge=a.merge)
    print(f"wrote {path}: {json.loads(path.read_text())['summary']}")
    return 0


def _f(x) -> str:
    return "n/a" if x is None else f"{x:.3f}"


if __name__ == "__main__":
    raise SystemExit(main())
