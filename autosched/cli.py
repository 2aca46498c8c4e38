"""Command line: autosched devices | tune | record | bench | report | export | convert | generate."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table

console = Console()
err_console = Console(stderr=True)

OPS = {"gemv-q4f16": "gemv_q4f16", "sgemm": "sgemm", "hgemm": "hgemm"}     # CLI name -> workload name
STRATEGY_NAMES = ("exhaustive", "random", "model", "evolutionary", "evolutionary-model")
GPU_DEFAULT_TRIALS = 500               # a whole space is ~10^4-10^5 configs: hours on one GPU


class CliError(Exception):
    pass


def _workload(op: str, shape: str):
    from autosched.workloads import WORKLOADS, WorkloadError
    if op not in OPS:
        raise CliError(f"unknown operator {op!r}; available: {', '.join(OPS)}")
    try:
        return WORKLOADS[OPS[op]].from_shape(shape)
    except WorkloadError as e:
        raise CliError(str(e)) from e


def _factor_over_one(text: str) -> float:
    try:
        f = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}")
    if not f > 1:
        raise argparse.ArgumentTypeError(f"must be above 1 (a factor over the best time), got {text}")
    return f


def _positive(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}")
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {n}")
    return n


def _progress() -> Progress:
    return Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TextColumn("{task.fields[best]}"), TimeElapsedColumn(), TimeRemainingColumn(),
                    console=console, transient=False)


def _make_runner(kind: str, workload, template, screen: float | None = None):
    """(runner, note).  auto: the GPU if there is one, else the replay runner (which answers from
    what was measured, so `screen` only applies on the GPU)."""
    from autosched.device import gpu_count
    from autosched.measure.recording import ReplayRunner, find_recording, shipped_recordings
    if kind == "auto":
        kind = "gpu" if gpu_count() > 0 else "replay"
    if kind == "gpu":
        from autosched.measure.gpu import GpuRunner
        return GpuRunner(screen=screen), "measuring on the GPU" + (
            f" (screening at {screen:g}x the best)" if screen else "")
    rec = find_recording(workload.key, template.family)
    if rec is None:
        have = ", ".join(p.name for p in shipped_recordings()) or "none"
        raise CliError(f"no CUDA GPU here and no recording for {workload.key}: the replay runner "
                       f"can only answer for recorded shapes (shipped: {have})")
    return ReplayRunner(rec), (f"[yellow]REPLAY[/]: no GPU used; answers are real measurements recorded on "
                               f"{rec.device.name} ({rec.date}, {len(rec.entries)} configs, {rec.name})")


def _print_space(space, workload) -> int:
    """Print the space's size before and after pruning and what each rule removed; return the size."""
    raw, size = space.raw_size(), space.size()
    console.print(f"space for {workload!r}: {raw:,} raw points, {size:,} after pruning "
                  f"({100 * size / raw:.3f}%)")
    t = Table("rule", "configs removed", title="pruning (each point counted under the first rule it breaks)",
              title_justify="left", show_lines=False)
    for name, n in space.prune_report():
        t.add_row(name, f"{n:,}")
    console.print(t)
    return size


def cmd_devices(args) -> int:
    from autosched.device import gpu_count, query
    from autosched.measure.recording import Recording, shipped_recordings
    n = gpu_count()
    if n == 0:
        console.print("no CUDA GPU found on this machine: `autosched tune` will use the replay runner")
    for i in range(n):
        info = query(i)
        console.print(f"GPU {i}: {info.name}  {info.arch}  {info.sm_count} SMs  "
                      f"L2 {info.l2_bytes >> 20} MB  driver {info.driver_version}  NVRTC {info.cuda_version}")
        console.print(f"        device key: {info.key}")
    recs = shipped_recordings()
    if recs:
        t = Table("recording", "workload", "GPU", "configs", "date", title="recorded data sets (replay runner)",
                  title_justify="left")
        for p in recs:
            r = Recording.load(p)
            t.add_row(p.name, r.workload_key, r.device.name, f"{len(r.entries):,}", r.date)
        console.print(t)
    return 0


def cmd_tune(args) -> int:
    from autosched.build import Builder
    from autosched.database import Database
    from autosched.templates import template_for
    from autosched.tuner import tune
    workload = _workload(args.op, args.shape)
    template = template_for(workload)
    runner, note = _make_runner(args.runner, workload, template, args.screen)
    console.print(note)
    with runner, Database(args.db) as db:
        device = runner.device_info
        space = template.space(workload, device)
        total = size = _print_space(space, workload)
        if hasattr(runner, "coverage_note"):
            console.print("[yellow]REPLAY[/]: " + runner.coverage_note(size))
            total = len(runner.recording.entries)
        builder = Builder(args.jobs) if (runner.needs_binary or args.build) else None
        if args.trials is None and runner.needs_binary and args.strategy != "exhaustive":
            args.trials = GPU_DEFAULT_TRIALS
        total = min(args.trials or total, total)
        with _progress() as prog:
            task = prog.add_task(f"tune {workload.shape_str}", total=total, best="")

            def on_result(cfg, m, res):
                best = f"best {res.best.median_us:.2f} us" if res.best else ""
                prog.update(task, advance=1, best=best)

            try:
                res = tune(workload, template, runner, db, strategy=args.strategy, trials=args.trials,
                           time_budget_s=args.time, builder=builder, seed=args.seed, on_result=on_result)
            except BaseException:
                if builder:
                    builder.close()
                raise
        _print_tune_result(res, workload, template, runner, device, builder)
    return 0 if res.best else 1


def _print_tune_result(res, workload, template, runner, device, builder=None) -> None:
    from autosched.tuner import measure_configs
    try:
        console.print(f"{res.trials} trials ({res.measured_now} measured now, {res.resumed} resumed from "
                      f"the database) in {res.elapsed_s:.1f} s; statuses {res.statuses}")
        if not res.best:
            console.print("[red]no config passed the correctness check[/]")
            return
        default_cfg = template.default_config(workload, device)
        # the default beside the tuned one: looked up in a replay, measured (one config) on a GPU
        default = measure_configs(workload, template, runner, [default_cfg], builder)[0]
    finally:
        if builder:
            builder.close()
    _, unit = workload.throughput(res.best.median_us)
    t = Table("", "median (us)", "min (us)", unit, "config", title=f"{workload.key} on {device.name}",
              title_justify="left")
    for name, cfg, m in (("tuned", res.best_config, res.best), ("default", default_cfg, default)):
        if m.ok:
            t.add_row(name, f"{m.median_us:.2f}", f"{m.min_us:.2f}", f"{workload.throughput(m.median_us)[0]:.1f}"
                      if unit == "TFLOP/s" else f"{workload.throughput(m.median_us)[0]:.0f}", json.dumps(cfg))
    console.print(t)
    if res.best.source.startswith("replay"):
        console.print(f"[yellow](replayed from {res.best.source[7:]}: times measured on {device.name}, "
                      "not on this machine)[/]")


def cmd_record(args) -> int:
    from autosched.build import Builder
    from autosched.database import Database
    from autosched.measure.gpu import GpuRunner
    from autosched.measure.protocol import Protocol
    from autosched.measure.recording import recording_from_db
    from autosched.templates import template_for
    from autosched.tuner import tune, versions
    import datetime
    workload = _workload(args.op, args.shape)
    template = template_for(workload)
    with GpuRunner(screen=args.screen) as runner, Database(args.db) as db, Builder(args.jobs) as builder:
        device = runner.device_info
        space = template.space(workload, device)
        size = _print_space(space, workload)
        if args.resume_from:
            n = _import_recording(Path(args.resume_from), workload, template, device, db)
            console.print(f"resumed from {args.resume_from}: {n:,} configs already measured")
        if args.screen:
            console.print(f"screening: a config slower than {args.screen:g}x the best so far in its first "
                          "runs is recorded from those runs")
        with _progress() as prog:
            task = prog.add_task(f"record {workload.shape_str}", total=size, best="")
            res = tune(workload, template, runner, db, strategy=args.strategy, builder=builder,
                       time_budget_s=args.time,
                       on_result=lambda c, m, r: prog.update(
                           task, advance=1, best=f"best {r.best.median_us:.2f} us" if r.best else ""))
        rec = recording_from_db(db, workload, template, device, Protocol().to_json(), versions("gpu"),
                                datetime.date.today().isoformat())
        out = Path(args.out) if args.out else Path(f"{template.family}-{workload.shape_str}.json.gz")
        rec.save(out)
        console.print(f"recorded {len(rec.entries):,} of {size:,} configs to {out} "
                      f"({res.statuses})")
    return 0


def _import_recording(path: Path, workload, template, device, db) -> int:
    """Put an earlier recording's measurements of this workload into the database (so a record run
    on another machine goes on where that one stopped); refuses one from another GPU or shape."""
    import dataclasses

    from autosched.measure.recording import Recording
    try:
        rec = Recording.load(path)
    except (OSError, ValueError) as e:
        raise CliError(str(e)) from e
    if (rec.workload_key, rec.template) != (workload.key, template.family):
        raise CliError(f"{path} records {rec.template} {rec.workload_key}, not {template.family} {workload.key}")
    if rec.device.key != device.key:
        raise CliError(f"{path} was measured on {rec.device.key}, not on this GPU ({device.key})")
    for cfg, m in rec.entries.values():
        db.add(workload.key, device.key, template.family, cfg, dataclasses.replace(m, source=f"gpu (recording {rec.name})"),
               rec.versions)
    return len(rec.entries)


def cmd_bench(args) -> int:
    from autosched.device import gpu_count
    if gpu_count() == 0:
        raise CliError("`autosched bench` measures on a GPU and there is none here; the committed "
                       "results are in bench/results/ (`autosched report` renders them)")
    if args.op == "decode":
        from autosched.benchmarks.decode import run
        path = run(models=tuple(args.models.split(",")), out_dir=args.out, tune_trials=args.trials or 64,
                   db_path=args.db, log=console.print)
        console.print(f"wrote {path}")
        return 0
    kw = {}
    if args.op in ("sgemm", "hgemm"):
        from autosched.benchmarks.gemm import run_benchmark
        kw["op"] = args.op
    else:
        from autosched.benchmarks.gemv_q4f16 import run_benchmark
    shapes = args.shapes.split(",") if args.shapes else None
    path = run_benchmark(shapes=shapes, trials=args.trials or 600, strategy=args.strategy, out_dir=args.out,
                         db_path=args.db, console=console, time_per_shape_s=args.time_per_shape, **kw)
    console.print(f"wrote {path}")
    return 0


def cmd_report(args) -> int:
    from autosched.report import write_report
    outputs = write_report(Path(args.results), readme=Path(args.readme) if args.readme else None,
                           plot_dir=Path(args.plots), console=console)
    for o in outputs:
        console.print(f"wrote {o}")
    return 0


def cmd_export(args) -> int:
    from autosched.database import Database
    from autosched.export import export_cuda
    from autosched.measure.recording import find_recording
    from autosched.templates import template_for
    workload = _workload(args.op, args.shape)
    template = template_for(workload)
    if args.config:
        try:
            config = json.loads(args.config)
        except json.JSONDecodeError as e:
            raise CliError(f"--config is not valid JSON: {e}") from e
        source = "--config"
    else:
        config, source = None, ""
        with Database(args.db) as db:
            rec = db.best(workload.key, args.device_key, template.family) if args.device_key else None
            if rec is None:
                groups = [g for g in db.workloads() if g[0] == workload.key and g[2] == template.family]
                for g in groups:
                    r = db.best(workload.key, g[1], template.family)
                    if r and (rec is None or r.measurement.median_us < rec.measurement.median_us):
                        rec = r
            if rec is not None:
                config, source = rec.config, f"database best on {rec.device_key}"
        if config is None:
            recd = find_recording(workload.key, template.family)
            if recd is None:
                raise CliError(f"nothing tuned for {workload.key}: run `autosched tune` first or pass --config")
            best = recd.best()
            if best is None:
                raise CliError(f"recording {recd.name} holds no config that passed its check")
            config, source = best[0], f"best of recording {recd.name}"
    device = _export_device(workload, template, args)
    out = Path(args.output or f"{template.family}_{workload.shape_str}.cu")
    export_cuda(workload, template, config, device, out, source=source)
    console.print(f"wrote {out} ({source})")
    return 0


def cmd_convert(args) -> int:
    """llama2.c checkpoint <-> Hugging Face Llama directory (weights; the format is told by the source)."""
    from autosched.models.hf import read_hf, write_hf
    from autosched.models.llama2c import read_checkpoint, write_checkpoint
    src, dst = Path(args.source), Path(args.dest)
    if not src.exists():
        raise CliError(f"{src} does not exist")
    if src.is_dir():
        cfg, w = read_hf(src)
        write_checkpoint(dst, cfg, w)
        kind = "llama2.c checkpoint"
    else:
        cfg, w = read_checkpoint(src)
        write_hf(dst, cfg, w)
        kind = "Hugging Face directory"
    console.print(f"wrote {dst} ({kind}): dim {cfg.dim}, {cfg.n_layers} layers, {cfg.n_heads} heads "
                  f"({cfg.n_kv_heads} kv), vocab {cfg.vocab_size}, {cfg.n_params():,} parameters")
    return 0


def load_model(spec: str):
    """A llama2.c checkpoint (.bin), a Hugging Face Llama directory, or `random:NAME` (seeded random
    weights at one of the seed's sizes): (config, weights, the path it came from or None)."""
    from autosched.models.hf import read_hf
    from autosched.models.llama2c import SEED_CONFIGS, random_weights, read_checkpoint
    if spec.startswith("random:"):
        name = spec.split(":", 1)[1]
        if name not in SEED_CONFIGS:
            raise CliError(f"unknown random model {name!r}; choose from {', '.join(SEED_CONFIGS)}")
        cfg = SEED_CONFIGS[name]
        if cfg.n_params() > 10**9:
            from autosched.engine.weights import random_weights_torch
            return cfg, random_weights_torch(cfg, 0, "cuda"), None
        return cfg, random_weights(cfg, 0), None
    path = Path(spec)
    if not path.exists():
        raise CliError(f"model {path} does not exist (a llama2.c .bin, a Hugging Face directory, or random:NAME)")
    cfg, w = read_hf(path) if path.is_dir() else read_checkpoint(path)
    return cfg, w, path


def cmd_generate(args) -> int:
    import time

    from autosched.device import gpu_count
    from autosched.models.text import Llama2cText, find_text
    if gpu_count() == 0:
        raise CliError("`autosched generate` runs the decode engine on a CUDA GPU and there is none here")
    cfg, weights, source = load_model(args.model)
    text = find_text(source, args.tokenizer)
    if isinstance(text, Llama2cText) and text.vocab_size != cfg.vocab_size:
        raise CliError(f"the tokenizer has {text.vocab_size} tokens and the model {cfg.vocab_size}: not a pair")
    if args.prompt_tokens:
        try:
            prompt = [int(t) for t in args.prompt_tokens.split(",")]
        except ValueError:
            raise CliError(f"--prompt-tokens wants comma-separated token ids, got {args.prompt_tokens!r}") from None
    elif text is not None:
        prompt = text.encode(args.prompt or "")
    else:
        raise CliError(f"no tokenizer found for {args.model} (a llama2.c tokenizer.bin beside the model, or a "
                       "Hugging Face tokenizer.json in its directory): pass --tokenizer PATH, or the prompt as "
                       "ids with --prompt-tokens 1,2,3")
    if not prompt:
        raise CliError("the prompt is empty: the model needs at least one token (BOS) to start from")
    if args.temperature < 0 or not 0 < args.top_p <= 1:
        raise CliError(f"--temperature must be >= 0 and --top-p in (0, 1], got {args.temperature} and {args.top_p}")
    bad = [t for t in prompt if not 0 <= t < cfg.vocab_size]
    if bad:
        raise CliError(f"prompt tokens {bad} are outside the vocabulary of {cfg.vocab_size}")
    from autosched.database import Database
    from autosched.engine.engine import Engine
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=err_console, transient=True) as progress, Database(args.db) as db:
        eng = Engine(cfg, weights, args.quant, db=db, verify=args.verify, reverify=args.reverify, progress=progress)
    for line in eng.describe():
        err_console.print(f"[dim]{line}[/]")
    out = sys.stdout.buffer

    def emit(t):
        out.write(text.push(t) if text else f" {t}".encode())
        out.flush()

    if text:
        out.write(text.start(prompt))
    import numpy as np

    from autosched.engine.sampling import sample
    rng = np.random.default_rng(args.seed)

    def choose(logits):
        return sample(logits.cpu().numpy(), args.temperature, args.top_p, rng)

    t0 = time.perf_counter()
    logits = eng.prefill(prompt)
    t1 = time.perf_counter()
    # EOS is token 2 in the llama2.c and Llama-2 vocabularies
    n = len(eng.extend(logits, args.max_tokens, choose=None if args.temperature == 0 else choose, on_token=emit,
                       stop_token=2 if args.stop_at_eos else None))
    t2 = time.perf_counter()
    out.write(b"\n")
    how = "greedy" if args.temperature == 0 else f"sampled at T={args.temperature}, top-p {args.top_p}"
    err_console.print(f"prompt {len(prompt)} tokens in {t1 - t0:.3f} s; generated {n} tokens at "
                      f"{n / max(t2 - t1, 1e-9):.1f} tokens/s ({args.quant}, {how}, streamed one by one; "
                      f"`autosched bench decode` times the device loop)")
    return 0


def _export_device(workload, template, args):
    from autosched.device import gpu_count, query
    from autosched.measure.recording import find_recording
    if gpu_count() > 0:
        return query(0)
    rec = find_recording(workload.key, template.family)
    if rec is None:
        from autosched.measure.recording import shipped_recordings, Recording
        recs = shipped_recordings()
        if not recs:
            raise CliError("no GPU and no recording to take the target GPU's limits from")
        rec = Recording.load(recs[0])
    return rec.device


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="autosched",
        description="Find the fastest CUDA kernel for an LLM-inference operator on this GPU. "
                    "Without a GPU, tuning replays measurements recorded on a real GPU (and says so).")
    sub = p.add_subparsers(dest="cmd", required=True, metavar="COMMAND")

    s = sub.add_parser("devices", help="list GPUs (and shipped recordings)")
    s.set_defaults(fn=cmd_devices)

    def screen_arg(s):
        s.add_argument("--screen", type=_factor_over_one, default=None, metavar="F",
                       help="on the GPU, time a config in full only if its first 3 runs are within F x the "
                            "best so far (e.g. 2); others keep those runs' figures (the database's and a "
                            "recording's runs column says so). Configs that slow cannot be the best; a "
                            "space of slow kernels is measured many times faster")

    def common(s, with_runner=True):
        s.add_argument("op", choices=list(OPS), help="operator to tune")
        s.add_argument("--shape", required=True, help="gemv-q4f16: NxK (e.g. 12288x4096); sgemm: MxNxK; hgemm: MxNxK, "
                                                           "with _bt for B stored (N, K)")
        s.add_argument("--db", default=None, help="SQLite database (default ~/.local/share/autosched/autosched.db)")
        s.add_argument("--jobs", type=int, default=None, help="NVRTC build processes (default: all cores)")

    s = sub.add_parser("tune", help="search the schedule space of one operator and shape",
                       description="Search the schedule space; every measurement goes to the database, "
                                   "so an interrupted run resumes where it stopped.")
    common(s)
    s.add_argument("--runner", choices=("auto", "gpu", "replay"), default="auto",
                   help="gpu: measure here; replay: answer from a shipped recording; auto: gpu if present")
    s.add_argument("--strategy", choices=STRATEGY_NAMES, default="model",
                   help="model (default): a gradient-boosted cost model, trained on everything measured "
                        "(other shapes too), picks what to measure next")
    s.add_argument("--trials", type=_positive, default=None,
                   help=f"stop after N configs (default: {GPU_DEFAULT_TRIALS} on a GPU, every recorded config "
                        "in a replay)")
    s.add_argument("--time", type=float, default=None, help="stop after S seconds")
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--build", action="store_true", help="with --runner replay, also compile every config")
    screen_arg(s)
    s.set_defaults(fn=cmd_tune)

    s = sub.add_parser("record", help="measure a whole pruned space on the GPU and write a recording")
    common(s)
    s.add_argument("--out", default=None, help="output .json.gz")
    s.add_argument("--time", type=float, default=None, help="stop after S seconds (resume later)")
    s.add_argument("--strategy", choices=("exhaustive", "random"), default="exhaustive",
                   help="order of measurement: random makes a time-limited recording a uniform sample")
    s.add_argument("--resume-from", default=None, metavar="REC",
                   help="a recording of an earlier (partial) run of this shape on this kind of GPU: its "
                        "measurements go into the database first and are not taken again")
    screen_arg(s)
    s.set_defaults(fn=cmd_record)

    s = sub.add_parser(
        "bench", help="tuned vs default vs floor vs cuBLAS / torch int4, JSON under bench/results",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Tune each shape through the GPU worker (configs the database holds are not measured "
                    "again), then, in this one\nprocess and under the timing protocol, time the tuned kernel, "
                    "the template's default config and the\nbaselines, each checked against a float64 "
                    "reference first; write bench/results/<op>-<device>-<date>.json.\n\n"
                    "  gemv-q4f16  tuned vs the same-bytes read floor, cuBLAS fp16 and torch int4\n"
                    "  sgemm       tuned vs cuBLAS FP32 (TF32 off) on the same A, B and C (from the memory "
                    "pool the tuner\n              measures in), and again on torch's caching-allocator "
                    "memory\n"
                    "  hgemm       the same for the FP16 tensor-core GEMM vs cuBLAS FP16 (FP32 accumulation)\n"
                    "  decode      the engine's tokens/s per model and format, quality, HF transformers "
                    "baselines\n\n"
                    "\"tuned\" is the fastest, re-timed in this process, of the database's best few configs.")
    s.add_argument("op", nargs="?", default="gemv-q4f16", choices=[*OPS, "decode"],
                   help="gemv-q4f16 | sgemm | hgemm | decode (the engine: tokens/s per model and format, quality, "
                        "matmul and attention sections, HF transformers baselines)")
    s.add_argument("--shapes", default=None, help="comma-separated shapes (default: those of BENCHMARKS.md "
                                                   "and the issue for the operator)")
    s.add_argument("--models", default="llama2-7b,stories15M,stories42M", help="decode: models to run")
    s.add_argument("--trials", type=_positive, default=None,
                   help="tuning trials per shape (default 600; decode: 64 configs per GEMV shape, 256 for a 7B)")
    s.add_argument("--strategy", choices=STRATEGY_NAMES, default="model")
    s.add_argument("--time-per-shape", type=float, default=None, help="tuning time limit per shape (s)")
    s.add_argument("--out", default="bench/results", help="folder of the results JSON (default bench/results)")
    s.add_argument("--db", default=None, help="SQLite database (default ~/.local/share/autosched/autosched.db)")
    s.set_defaults(fn=cmd_bench)

    s = sub.add_parser("report", help="tables and plots from bench/results (and the README table)")
    s.add_argument("--results", default="bench/results")
    s.add_argument("--plots", default="bench/plots")
    s.add_argument("--readme", default=None, help="README to update between the results markers")
    s.set_defaults(fn=cmd_report)

    s = sub.add_parser("export", help="write a tuned kernel as a standalone .cu with its launch parameters")
    s.add_argument("op", choices=list(OPS))
    s.add_argument("--shape", required=True)
    s.add_argument("--config", default=None, help="config as JSON (default: best in the database)")
    s.add_argument("--device-key", default=None)
    s.add_argument("--db", default=None)
    s.add_argument("-o", "--output", default=None)
    s.set_defaults(fn=cmd_export)

    s = sub.add_parser("convert", help="llama2.c checkpoint <-> Hugging Face Llama directory",
                       description="Convert model weights between the llama2.c format (a .bin file) and a "
                                   "Hugging Face Llama directory (config.json + model.safetensors); the "
                                   "direction follows the source: a directory is read as Hugging Face.")
    s.add_argument("source")
    s.add_argument("dest")
    s.set_defaults(fn=cmd_convert)

    s = sub.add_parser("generate", help="greedy text generation on the GPU with the decode engine",
                       description="Load a Llama-family model, build the engine (tuned q4f16_1 GEMVs where the "
                                   "database or a shipped recording has them, rule-based defaults elsewhere), "
                                   "and stream greedy tokens with tokens/s at the end.")
    s.add_argument("--model", required=True,
                   help="llama2.c checkpoint .bin, Hugging Face Llama directory, or random:stories15M | "
                        "random:stories42M | random:llama2-7b (seeded random weights)")
    s.add_argument("--prompt", default="", help="text (needs a tokenizer: llama2.c tokenizer.bin or a Hugging "
                                                 "Face tokenizer.json, the latter through transformers)")
    s.add_argument("--prompt-tokens", default=None, help="the prompt as comma-separated token ids instead")
    s.add_argument("--tokenizer", default=None, help="tokenizer.bin, tokenizer.json or a directory with one "
                                                     "(default: beside the model, or in its directory)")
    s.add_argument("--quant", choices=("fp32", "fp16", "int8", "q4f16_1"), default="q4f16_1",
                   help="weight format of the matmuls (default q4f16_1)")
    s.add_argument("--max-tokens", type=_positive, default=128)
    s.add_argument("--stop-at-eos", action="store_true", help="stop at token 2 (llama2.c's EOS)")
    s.add_argument("--temperature", type=float, default=0.0,
                   help="0 (default): greedy, chosen on the GPU; > 0: sample on the host from softmax(logits / T)")
    s.add_argument("--top-p", type=float, default=0.9, help="with --temperature: nucleus mass kept (default 0.9)")
    s.add_argument("--seed", type=int, default=0, help="with --temperature: sampling seed")
    s.add_argument("--verify", type=_positive, default=4, metavar="N",
                   help="q4f16_1: per matmul shape, serve the fastest of the N best measured GEMV configs, "
                        "timed in a CUDA graph and then inside the engine's own decode step (default 4; 1 "
                        "serves the tuning winner as is)")
    s.add_argument("--reverify", action="store_true",
                   help="time the candidates in the decode step again, though the database holds their "
                        "times from an engine of the same model, device and candidates")
    s.add_argument("--db", default=None)
    s.set_defaults(fn=cmd_generate)
    return p


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.fn(args)
    except (CliError, ValueError, FileNotFoundError) as e:   # ConfigError, WorkloadError: ValueErrors
        err_console.print(f"[red]error:[/] {e}")
        return 2
    except KeyboardInterrupt:
        err_console.print("interrupted: measurements so far are in the database; run again to resume")
        return 130


if __name__ == "__main__":
    sys.exit(main())
