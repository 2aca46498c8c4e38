"""Command line: argument parsing and printing over the public API (autosched/api.py), one
subcommand each, with the operators taken from the family registry (autosched/registry.py)."""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table

from autosched import api
from autosched.api import GPU_DEFAULT_TRIALS, RUNNERS, AutoschedError
from autosched.engine.sampling import sample
from autosched.models.quantize import FORMATS
from autosched.registry import FAMILIES, options as family_options
from autosched.report import write_report
from autosched.search import STRATEGY_NAMES
from autosched.tune_command import command

# the modules of the heavier commands (engine, benchmarks, dynamic and model tuning, database, packs) are
# imported inside functions: the command line starts without them (start-up time), and gpu_count is also
# looked up at call time, as tests replace it on its module



def _console(stderr: bool = False) -> Console:
    """Rich output; where it goes to a file or a pipe (no terminal, no COLUMNS), lines are never
    wrapped or cut at 80 columns, so tables, names and markdown survive redirection whole."""
    c = Console(stderr=stderr)
    if not c.is_terminal and "COLUMNS" not in os.environ:
        c = Console(stderr=stderr, width=10_000)
    return c


console = _console()
err_console = _console(stderr=True)


class CliError(AutoschedError):
    pass


def _workload(args):
    op, shape = args.op, args.shape
    if not isinstance(shape, str) or not shape.strip():      # `--shape=--` reaches here as [] (argparse)
        raise CliError(f"--shape needs a value: {FAMILIES[op].shape_help}")
    # every family's options are flags of every command (argparse knows no op yet); the family
    # refuses, naming it, any it does not take
    given = {name: getattr(args, name, None) for name in family_options()}
    return api.workload(op, shape, **given)


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


def _seconds(text: str) -> float:
    try:
        f = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}")
    if not 0 < f < float("inf"):     # NaN fails both comparisons
        raise argparse.ArgumentTypeError(f"must be a number of seconds above 0, got {text}")
    return f


def _progress() -> Progress:
    return Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TextColumn("{task.fields[best]}"), TimeElapsedColumn(), TimeRemainingColumn(),
                    console=console, transient=False)


def _print_plan(plan) -> None:
    """The space's size before and after pruning and what each rule removed."""
    raw, size = plan.raw_size, plan.space_size
    console.print(plan.runner_note)
    console.print(f"space for {plan.workload!r}: {raw:,} raw points, {size:,} after pruning "
                  f"({100 * size / raw:.3f}%)" + (f" over templates {', '.join(plan.templates)}"
                                                  if len(plan.templates) > 1 else ""))
    t = Table("rule", "configs removed", title="pruning (each point counted under the first rule it breaks)",
              title_justify="left", show_lines=False)
    for name, n in plan.prune_report:
        t.add_row(name, f"{n:,}")
    console.print(t)
    for note in plan.empty:
        console.print(note)
    for note in plan.coverage:
        console.print("[yellow]REPLAY[/]: " + note)
    if plan.stale:
        console.print(f"{plan.stale:,} database rows of this shape were measured with another build of its kernels "
                      "(a kernel edit that changed the code, another NVRTC, or from before builds were recorded): "
                      "kept, not used")


class _Bar:
    """A progress bar started by the API's on_start and advanced by its on_result.  Where the output
    is not a terminal (a pipe, a log file) the bar cannot redraw, so a plain line is printed every
    twentieth of the run or every 10 seconds instead."""

    EVERY_S = 10.0

    def __init__(self, prog: Progress, verb: str):
        self.prog, self.verb, self.task = prog, verb, None
        self.plain = not console.is_terminal
        self.done, self.total, self.t0, self.last = 0, 0, 0.0, 0.0

    def start(self, plan) -> None:
        _print_plan(plan)
        self.what = f"{self.verb} {plan.workload.shape_str}"
        self.total = plan.total
        # one clock for the bar, its plain lines and the result's "in N s": the search's, from here
        self.t0 = time.monotonic()
        self.task = self.prog.add_task(self.what, total=plan.total, best="")

    def result(self, cfg, m, res) -> None:
        best = f"best {res.best.median_us:.2f} us" if res.best else ""
        self.prog.update(self.task, advance=1, best=best)
        self.done += 1
        if self.plain:
            now = time.monotonic()
            step = max(1, self.total // 20)
            if self.done % step == 0 or now - self.last >= self.EVERY_S:
                self.last = now
                console.print(f"{self.what}: {self.done}/{self.total} {best} ({now - self.t0:.0f} s)",
                              highlight=False)


def cmd_pack(args) -> int:
    from autosched import packs
    from autosched.database import Database
    if args.pack_cmd == "merge":
        n = packs.merge_packs(args.packs, args.out)
        console.print(f"wrote {args.out}: {n} configs from {len(args.packs)} pack(s)")
        return 0
    readonly = args.pack_cmd in ("export", "dump")
    with Database(args.db, readonly=readonly) as db:
        if args.pack_cmd == "export":
            n = packs.export_pack(db, args.out, args.device_key, args.top)
            console.print(f"wrote {args.out}: {n} configs from {db.path}")
        elif args.pack_cmd == "import":
            added, kept = packs.import_pack(db, args.pack)
            console.print(f"{args.pack}: {added} configs added to {db.path}, {kept} kept as measured there (as fast or faster)")
        else:
            n = packs.dump(db, args.out, args.format)
            console.print(f"wrote {args.out}: {n} rows of {db.path}")
    return 0


def cmd_devices(args) -> int:
    gpus, recs = api.devices()
    if not gpus:
        console.print("no CUDA GPU found on this machine: `autosched tune` will use the replay runner")
    for i, info in enumerate(gpus):
        console.print(f"GPU {i}: {info.name}  {info.arch}  {info.sm_count} SMs  "
                      f"L2 {info.l2_bytes >> 20} MB  driver {info.driver_version}  NVRTC {info.cuda_version}")
        console.print(f"        device key: {info.key}")
    if recs:
        t = Table("recording", "workload", "template", "GPU", "configs", "date",
                  title="recorded data sets (replay runner)", title_justify="left")
        for p, r in recs:
            t.add_row(p.name, r.workload_key, r.template, r.device.name, f"{len(r.entries):,}", r.date)
        console.print(t)
    stale = api.stale_rows(args.db, recordings=recs)
    if stale:
        t = Table("workload", "GPU", "template", "stale rows", title="database rows of other builds (kept, not "
                  "used: a kernel edit that changed the code, another NVRTC, or from before builds were recorded)",
                  title_justify="left")
        for (wk, dk, tf), n in stale.items():
            t.add_row(wk, dk, tf, f"{n:,}")
        console.print(t)
    return 0


def cmd_tune(args) -> int:
    workload = _workload(args)
    with _progress() as prog:
        bar = _Bar(prog, "tune")
        run = api.tune(workload, runner=args.runner, db=args.db, strategy=args.strategy, trials=args.trials,
                       time_s=args.time, seed=args.seed, screen=args.screen, jobs=args.jobs, build=args.build,
                       template=args.template, cluster=args.cluster, gpus=api.parse_gpus(args.gpus),
                       on_start=bar.start, on_result=bar.result)
    _print_tune_result(run)
    return 0 if run.result.best else 1


def _exports_all(dw) -> bool:
    """Whether the standalone .cu launches every micro-kernel family for `dw` (the layout of a linear
    layer, FP16: dynamic/export.py); elsewhere --export tunes hgemm_dyn alone."""
    return dw.layout == "nt" and dw.dtype == "fp16"


def cmd_tune_dynamic(args) -> int:
    """One tuning run for a whole range of M (DietCode); prints the kernels, the verification and
    the tree's table, and writes the .cu with --export."""
    from autosched.dynamic import front
    from autosched.dynamic.sketch import describe_any
    if not isinstance(args.shape, str) or not args.shape.strip():
        raise CliError("--shape needs a value, e.g. Mx4096x4096_bt")
    dw = front.dynamic_workload(args.op, args.shape, args.range, _int_list("--instances", args.instances),
                              _float_list("--weights", args.weights), args.step,
                              **{n: getattr(args, n, None) for n in family_options()})
    res = front.tune_dynamic(dw, runner=args.runner, db=args.db, rounds=args.rounds, per_round=args.per_round,
                           max_kernels=args.kernels, seed=args.seed, jobs=args.jobs, build=args.build,
                           row_probe=not args.no_row_probe,
                           templates=(args.templates.split(",") if args.templates
                                      else ["hgemm_dyn"] if args.export and not _exports_all(dw) else None),
                           on_start=lambda note: console.print(note),
                           on_progress=lambda h: console.print(
                               f"round {h['round'] + 1}: {h['measured']} micro-kernels probed, weighted best "
                               f"{h['weighted_tflops_best']:.1f} TFLOP/s over {len(dw.instances)} instances"))
    table = Table(title=f"{dw.key}: {len(res.kernels)} micro-kernels of {res.measured} probed "
                        f"({res.seeds} of them the ladders' seeds) "
                        f"in {res.elapsed_s:.1f} s, {res.measurements} measurements")
    for col in ("M", "weight", "kernel", "predicted us", "measured us", "error"):
        table.add_column(col, justify="right")
    for v in res.verification:
        flag = "[red]" if v["flagged"] else ""
        # a kernel that measured slower than another's corrected prediction was replaced by it
        first = v.get("replaced")
        kernel = str(v["kernel"]) + (f" (not {first['kernel']}: {first['measured_us']:.2f} us)" if first else "")
        table.add_row(str(v["M"]), f"{v['weight']:.3f}", kernel, f"{v['predicted_us']:.2f}",
                      f"{v['measured_us']:.2f}", f"{flag}{100 * v['error']:+.1f}%")
    console.print(table)
    for i, k in enumerate(res.kernels):
        console.print(f"kernel {i}: {describe_any(k.family, k.config)}, {k.report.registers} registers ({k.report.source}), "
                      f"{k.report.blocks_per_sm} blocks/SM")
    d = res.dispatcher
    lows = [dw.lo] + [b + 1 for b in d.bounds]
    highs = d.bounds + [dw.hi]
    console.print("dispatch: " + ", ".join(f"M {a}..{b} -> {k}" for a, b, k in zip(lows, highs, d.labels)))
    if res.flagged:
        console.print(f"[yellow]{len(res.flagged)} instance(s) measured more than 10% off the prediction[/]: "
                      + ", ".join(str(v["M"]) for v in res.flagged))
    console.print(f"saved {res.artifact}")
    if args.export:
        console.print(f"wrote {front.export_dynamic(res, args.export)}")
    return 0


def _int_list(flag: str, text):
    if text is None:
        return None
    try:
        return [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise CliError(f"{flag} must be integers separated by commas, got {text!r}") from None


def _float_list(flag: str, text):
    if text is None:
        return None
    try:
        return [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise CliError(f"{flag} must be numbers separated by commas, got {text!r}") from None


def _print_tune_result(run) -> None:
    res, workload, device = run.result, run.plan.workload, run.plan.device
    console.print(f"{res.trials} trials ({res.measured_now} measured now, {res.resumed} resumed from "
                  f"the database) in {res.wall_s:.1f} s; statuses {res.statuses}")
    _print_rates(res)
    if not res.best:
        if res.trials == 0:
            console.print("[red]nothing was measured[/] (the time or trial budget ran out before the first "
                          "config): give it more with --time or --trials")
        else:
            console.print("[red]no config passed the correctness check[/]")
        return
    _, unit = workload.throughput(res.best.median_us)
    t = Table("", "median (us)", "min (us)", unit, "config", title=f"{workload.key} on {device.name}",
              title_justify="left")
    tuned_cfg = res.best_config if len(run.plan.templates) > 1 else res.best_knobs
    rows = [("tuned", tuned_cfg, res.best)]
    if run.default is not None:
        rows.append(("default", {"template": run.default_template, **run.default_config}
                     if len(run.plan.templates) > 1 else run.default_config, run.default))
    for name, cfg, m in rows:
        if m.ok:
            t.add_row(name, f"{m.median_us:.2f}", f"{m.min_us:.2f}", f"{workload.throughput(m.median_us)[0]:.1f}"
                      if unit == "TFLOP/s" else f"{workload.throughput(m.median_us)[0]:.0f}", json.dumps(cfg))
    console.print(t)
    if run.replayed:
        console.print(f"[yellow](replayed from {res.best.source[7:]}: times measured on {device.name}, "
                      "not on this machine)[/]")


def _print_rates(res) -> None:
    """What the GPUs measured per second beside what NVRTC could build: a build rate under the
    measure rate (or GPUs that waited on builds) says the run was bound by the compiler."""
    if res.measured_now == 0:
        return
    line = f"measured {res.measure_rate:.1f} configs/s"
    if res.built:
        line += (f"; NVRTC built {res.built} at {res.build_rate:.1f} configs/s with {res.build_jobs} "
                 f"processes")
    if res.build_wait_s > 0.05 * res.elapsed_s:
        line += f"; the GPUs waited {res.build_wait_s:.1f} s on builds (more --jobs would help)"
    console.print(line)


def cmd_record(args) -> int:
    workload = _workload(args)
    if args.screen:
        console.print(f"screening: a config slower than {args.screen:g}x the best so far in its first "
                      "runs is recorded from those runs")
    with _progress() as prog:
        bar = _Bar(prog, "record")
        path, rec, res = api.record(workload, out=args.out, db=args.db, time_s=args.time, strategy=args.strategy,
                                    resume_from=args.resume_from, screen=args.screen, jobs=args.jobs,
                                    template=args.template, cluster=args.cluster,
                                    gpus=api.parse_gpus(args.gpus), on_start=bar.start, on_result=bar.result)
    console.print(f"recorded {len(rec.entries):,} of {rec.space_size:,} configs to {path} ({res.statuses})")
    _print_rates(res)
    return 0


def cmd_bench(args) -> int:
    from autosched.device import gpu_count
    if gpu_count() == 0:
        raise CliError("`autosched bench` measures on a GPU and there is none here; the committed "
                       "results are in bench/results/ (`autosched report` renders them)")
    if args.op == "decode":     # the engine's benchmark: whole models, not one operator family
        from autosched.benchmarks.decode import run
        path = run(models=tuple(args.models.split(",")), out_dir=args.out, tune_trials=args.trials or 64,
                   db_path=args.db, log=console.print)
        console.print(f"wrote {path}")
        return 0
    fam = FAMILIES[args.op]
    shapes = args.shapes.split(",") if args.shapes else None
    extra = {}
    if args.split:
        if args.op != "hgemm":
            raise CliError("--split shares a shape's tuning time among hgemm's templates; it is for `bench hgemm`")
        from autosched.benchmarks.hgemm import parse_split
        try:
            extra["split"] = parse_split(args.split)
        except ValueError as e:
            raise CliError(str(e)) from None
    path = fam.benchmark_fn()(shapes=shapes, trials=args.trials or fam.bench_trials, strategy=args.strategy,
                              out_dir=args.out, db_path=args.db, console=console,
                              time_per_shape_s=args.time_per_shape, **fam.bench_kwargs, **extra)
    console.print(f"wrote {path}")
    return 0


def cmd_report(args) -> int:
    outputs = write_report(Path(args.results), readme=Path(args.readme) if args.readme else None,
                           plot_dir=Path(args.plots), console=console)
    for o in outputs:
        console.print(f"wrote {o}")
    return 0


def cmd_export(args) -> int:
    workload = _workload(args)
    config = None
    if args.config is not None:
        try:
            config = json.loads(args.config)
        except json.JSONDecodeError as e:
            raise CliError(f"--config is not valid JSON: {e}") from e
        if not isinstance(config, dict):
            raise CliError(f"--config must be a JSON object of knob values, got {args.config!r}")
    path, source = api.export(workload, args.output, config=config, template=args.template, db=args.db,
                              device_key=args.device_key)
    console.print(f"wrote {path} ({'--config' if config is not None else source})")
    return 0


def _exit_on_sigterm(signum, frame):
    raise SystemExit(128 + signum)      # unwinds, so a write in progress removes its temporary


def cmd_convert(args) -> int:
    """llama2.c checkpoint <-> Hugging Face Llama directory (the output's format by the destination)."""
    before = signal.signal(signal.SIGTERM, _exit_on_sigterm)
    try:
        cfg, kind = api.convert(args.source, args.dest, force=args.force)
    finally:
        signal.signal(signal.SIGTERM, before)
    console.print(f"wrote {args.dest} ({kind}): dim {cfg.dim}, {cfg.n_layers} layers, {cfg.n_heads} heads "
                  f"({cfg.n_kv_heads} kv), vocab {cfg.vocab_size}, {cfg.n_params():,} parameters")
    return 0


def cmd_generate(args) -> int:
    from autosched.device import gpu_count
    from autosched.models.text import Llama2cText, find_text
    if gpu_count() == 0:
        raise CliError("`autosched generate` runs the decode engine on a CUDA GPU and there is none here")
    cfg, weights, source = api.load_model(args.model)
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
        eng = Engine(cfg, weights, args.quant, db=db, verify=args.verify, reverify=args.reverify, progress=progress,
                     step=args.step)
    for line in eng.describe(args.model):
        err_console.print(f"[dim]{line}[/]" if not line.startswith("untuned") else f"[yellow]{line}[/]", highlight=False)
    out = sys.stdout.buffer

    def emit(t):
        out.write(text.push(t) if text else f" {t}".encode())
        out.flush()

    if text:
        out.write(text.start(prompt))
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


def _minutes(text: str) -> float:
    try:
        f = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of minutes, got {text!r}")
    if not 0 < f < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a number of minutes above 0, got {text}")
    return f


def cmd_tune_model(args) -> int:
    from autosched import model_tuning
    formats = [f.strip() for f in args.formats.split(",") if f.strip()]
    bars: dict = {}

    def on_plan(plan, kind):
        console.print(f"{args.model}: dim {plan.cfg.dim}, {plan.cfg.n_layers} layers, {plan.cfg.n_heads} heads "
                      f"({plan.cfg.n_kv_heads} kv), hidden {plan.cfg.hidden_dim}, vocab {plan.cfg.vocab_size}; "
                      f"budget {args.budget:g} min; " + ("[yellow]REPLAY[/] of the shipped recordings (no GPU)"
                                                         if kind == "replay" else "measuring on the GPU"))
        t = Table("format", "kernel", "shape", "launches", "share of step", "tuned as / why not",
                  title="the decode step (share estimated from bytes moved and launches)", title_justify="left")
        for fmt, ks in plan.kernels.items():
            for k in ks:
                t.add_row(fmt, k.name + (f" + {k.epilogue}" if k.epilogue and k.epilogue != "store" else ""),
                          "x".join(map(str, k.shape)) if k.shape else "", str(k.launches), f"{k.share:.1%}",
                          k.workload.key if k.tunable else k.why_not)
        console.print(t)
        if not plan.shapes:
            console.print("[yellow]nothing tunable in these formats[/]")
        else:
            console.print(f"tuning {len(plan.shapes)} shape(s), the largest share of the step first"
                          + ("; a shape no recording holds is served the cost model's prediction"
                             if kind == "replay" else ""))

    def on_shape(row, p):
        bars[id(row)] = prog.add_task(f"{p.workload.shape_str} ({', '.join(row.shape.names)}, "
                                      f"{row.shape.budget_s:.0f} s)", total=p.total, best="")

    def on_result(cfg, m, res):
        task = next(reversed(bars.values()))
        prog.update(task, advance=1, best=f"best {res.best.median_us:.2f} us" if res.best else "")

    def on_done(row):
        if id(row) not in bars:         # never searched: said now, not only in the table at the end
            console.print(f"{row.shape.workload.shape_str} ({', '.join(row.shape.names)}): "
                          + "; ".join(x for x in (row.note or row.status, row.source) if x), highlight=False)

    with _progress() as prog:
        run = model_tuning.tune_model(args.model, formats=formats, budget_min=args.budget, runner=args.runner, db=args.db,
                             gpus=api.parse_gpus(args.gpus), seed=args.seed, verify=not args.no_verify, on_plan=on_plan, on_shape=on_shape,
                             on_result=on_result, on_done=on_done)
    t = Table("shape", "kernels", "share", "budget (s)", "trials", "best (us)", "default (us)", "best vs default",
              "source", title=f"tune-model {args.model} in {run.seconds:.0f} s", title_justify="left")
    for r in run.rows:
        # a shape no recording holds spent none of its budget: its share went to the shapes after it
        t.add_row(r.shape.workload.shape_str, ", ".join(r.shape.names), f"{r.shape.share:.1%}",
                  f"{r.shape.budget_s:.0f}" if r.status != "not recorded" else "", str(r.trials), f"{r.best_us:.2f}" if r.best_us else "",
                  f"{r.default_us:.2f}" if r.default_us else "", f"{r.speedup:.2f}x" if r.speedup else "",
                  r.source if r.status == "tuned" else f"[yellow]{r.status}[/]: {r.source or r.note}")
    console.print(t)
    for fmt, lines in run.verification.items():
        console.print(f"verified in the {fmt} engine's step ({run.tokens_per_s.get(fmt, 0):.0f} tokens/s):")
        for line in lines:
            console.print(f"  {line}", highlight=False)
    missing = [r for r in run.untuned if r.status == "not recorded"]
    if missing:
        console.print(f"[yellow]{len(missing)} shape(s) no recording holds[/] ("
                      + ", ".join(r.shape.workload.shape_str for r in missing)
                      + "): served the cost model's prediction until tuned on a GPU: "
                      + command(args.model, formats, args.budget))
    return 0 if run.rows and not [r for r in run.untuned if r.status in ("failed", "nothing passed")] else 1


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="autosched", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Find the fastest CUDA kernel for an LLM-inference operator on this GPU.\n"
                    "Without a GPU, tuning replays measurements recorded on a real GPU (and says so).",
        epilog="operators (OP):\n" + "".join(
            f"  {f.name:<11} {f.summary}\n  {'':<11} shape: {f.shape_help}; templates: "
            f"{', '.join(t.family for t in f.templates)}\n" for f in FAMILIES.values())
        + "\n`autosched COMMAND --help` explains each command; the same is a Python API: import autosched.")
    sub = p.add_subparsers(dest="cmd", required=True, metavar="COMMAND")

    s = sub.add_parser("pack", help="tuning packs: export a database's winners, import or merge them; dump rows",
                       description="A pack is a small versioned JSON file of the best measured configs per "
                                   "device key, workload, template and build, with their times and provenance. "
                                   "Imported into another database they serve as its own rows do (a pack of "
                                   "another GPU model or kernel build is kept but ranks nothing there); a config "
                                   "the database measured faster keeps its own row.")
    ps = s.add_subparsers(dest="pack_cmd", required=True, metavar="ACTION")
    q = ps.add_parser("export", help="write the database's best configs to a pack file")
    q.add_argument("out", help="the pack file to write (JSON; written whole or not at all)")
    q.add_argument("--db", default=None, help="SQLite database (default: the user's)")
    q.add_argument("--device-key", default=None, help="only this device key's rows (`autosched devices` lists keys)")
    q.add_argument("--top", type=_positive, default=1, help="configs kept per device, workload, template and build")
    q = ps.add_parser("import", help="add a pack's configs to the database")
    q.add_argument("pack")
    q.add_argument("--db", default=None)
    q = ps.add_parser("merge", help="several packs into one, the faster measured config winning")
    q.add_argument("packs", nargs="+")
    q.add_argument("--out", required=True)
    q = ps.add_parser("dump", help="every database row (each build and status) as CSV or JSON, for analysis")
    q.add_argument("out", help="file.csv or file.json")
    q.add_argument("--db", default=None)
    q.add_argument("--format", choices=("csv", "json"), default=None, help="default: by the file's suffix")
    s.set_defaults(fn=cmd_pack)

    s = sub.add_parser("devices", help="list GPUs, shipped recordings, and stale database rows")
    s.add_argument("--db", default=None, help="SQLite database (default ~/.local/share/autosched/autosched.db)")
    s.set_defaults(fn=cmd_devices)

    def screen_arg(s):
        s.add_argument("--screen", type=_factor_over_one, default=None, metavar="F",
                       help="on the GPU, time a config in full only if its first 3 runs are within F x the "
                            "best so far (e.g. 2); others keep those runs' figures (the database's and a "
                            "recording's runs column says so). Configs that slow cannot be the best; a "
                            "space of slow kernels is measured many times faster")

    def cluster_arg(s):
        s.add_argument("--cluster", default=None, metavar="ADDRESS",
                       help="measure on a Ray cluster (pip install 'autosched[cluster]'), one actor per GPU, "
                            "results written here: HOST:6379 of `ray start --head`, auto (the one started on "
                            "this machine, else a new local one) or local; a cluster without GPUs replays")

    def op_and_shape(s, what="operator to tune"):
        s.add_argument("op", choices=list(FAMILIES), help=what + ": " + "; ".join(
            f"{f.name}: {f.summary}" for f in FAMILIES.values()))
        s.add_argument("--shape", required=True, help="; ".join(f"{f.name}: {f.shape_help}" for f in FAMILIES.values()))
        s.add_argument("--template", default=None, help="only this template of the operator (default: every "
                       "template that serves it, the template a knob of the search): " + "; ".join(
                           f"{f.name}: {', '.join(t.family for t in f.templates)}" for f in FAMILIES.values()))
        for name, (o, fams) in family_options().items():
            s.add_argument(f"--{name}", default=None, metavar="|".join(o.choices),
                           help=f"{', '.join(fams)} only: {o.help} (default {o.default})")

    def common(s):
        op_and_shape(s)
        s.add_argument("--db", default=None, help="SQLite database (default ~/.local/share/autosched/autosched.db)")
        s.add_argument("--jobs", type=_positive, default=None, help="NVRTC build processes (default: all cores)")
        s.add_argument("--gpus", default=None, metavar="all|ID,...",
                       help="GPUs of this machine to measure on, one worker each (default all; GPUs of "
                            "different models are refused: name one model's ids)")

    s = sub.add_parser("tune", help="search the schedule space of one operator and shape",
                       description="Search the schedule space; every measurement goes to the database, "
                                   "so an interrupted run resumes where it stopped.")
    common(s)
    s.add_argument("--runner", choices=RUNNERS, default="auto",
                   help="gpu: measure here; replay: answer from a shipped recording; auto: gpu if present; "
                        "ray: a Ray cluster (--cluster, default auto)")
    s.add_argument("--strategy", choices=STRATEGY_NAMES, default="model",
                   help="model (default): a gradient-boosted cost model, trained on everything measured "
                        "(other shapes too), picks what to measure next")
    s.add_argument("--trials", type=_positive, default=None,
                   help=f"evaluate N configs of this shape in all (default: {GPU_DEFAULT_TRIALS} on a GPU, every "
                        "recorded config in a replay); those the database already holds count, so the same "
                        "command run again finishes an interrupted run's budget")
    s.add_argument("--time", type=_seconds, default=None, help="stop after S seconds (the batch in flight is "
                                                                 "finished)")
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--build", action="store_true", help="with the replay runner, also compile every config it "
                   "answers for with NVRTC (a config that fails to compile here is recorded as a compile error)")
    screen_arg(s)
    cluster_arg(s)
    s.set_defaults(fn=cmd_tune)

    s = sub.add_parser("tune-dynamic", help="one tuning run for a whole range of M (DietCode): micro-kernels "
                       "and a decision-tree dispatcher",
                       description="Tune hgemm for every M of a range at once: micro-kernels sampled from the "
                                   "largest M, probed at two grids, a [kernels x instances] cost model, the "
                                   "tuning instances verified, a decision tree M -> kernel (saved beside the "
                                   "database; --export writes it with the kernels as one .cu).")
    s.add_argument("op", choices=["hgemm"], help="the operator (hgemm: FP16 tensor-core GEMM)")
    s.add_argument("--shape", required=True, help="the shape with the symbol M first: Mx4096x4096_bt (B stored "
                   "(N, K), Y = X W^T)")
    s.add_argument("--range", required=True, metavar="LO:HI", help="the range of M, e.g. 1:4096 (BERT: 16:2048 "
                   "with --step 16)")
    s.add_argument("--step", type=_positive, default=1, help="M is a multiple of this (BERT: 16 x length)")
    s.add_argument("--instances", default=None, metavar="M,M,...", help="the Ms tuned on (default: the ends, "
                   "powers of two and three odd values of the range)")
    s.add_argument("--weights", default=None, metavar="W,W,...", help="their weights (default uniform)")
    for name, (o, fams) in family_options().items():
        if "hgemm" in fams:
            s.add_argument(f"--{name}", default=None, metavar="|".join(o.choices), help=f"{o.help} (default {o.default})")
    s.add_argument("--runner", choices=("auto", "gpu", "synthetic"), default="auto",
                   help="gpu: measure here; synthetic: modelled times, a dry run without a GPU (said so)")
    s.add_argument("--rounds", type=_positive, default=4, help="search rounds (default 4)")
    s.add_argument("--per-round", type=_positive, default=12, help="micro-kernels probed a round (default 12)")
    s.add_argument("--kernels", type=_positive, default=6, help="most micro-kernels dispatched (default 6)")
    s.add_argument("--no-row-probe", action="store_true", help="probe each micro-kernel at its two grids only, "
                   "not also on one row of tiles over all of N (which keeps the small-M predictions honest)")
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--export", default=None, metavar="FILE.cu", help="write the kernels and the tree as one .cu")
    s.add_argument("--db", default=None, help="SQLite database (default ~/.local/share/autosched/autosched.db)")
    s.add_argument("--jobs", type=_positive, default=None, help="NVRTC build processes (default: all cores)")
    s.add_argument("--build", action="store_true", help="compile each micro-kernel with NVRTC for its register "
                   "count even with the synthetic runner")
    s.add_argument("--templates", default=None, metavar="hgemm_dyn,hgemm_wgmma",
                   help="micro-kernel templates sampled (default: hgemm_dyn, with hgemm_wgmma on an sm_90 GPU, "
                   "and hgemm_wgmma_splitk beside it unless AUTOSCHED_DYN_SPLIT_K=0, and hgemm_stream (layout nt) "
                   "unless AUTOSCHED_DYN_STREAM=0, and hgemm_wgmma_swap (layout nt, sm_90) unless AUTOSCHED_WGMMA_SWAP=0, "
                   "and hgemm_wgmma_sched (sm_90) unless AUTOSCHED_DYN_SCHED=0; with --export the same for FP16 "
                   "and layout nt, hgemm_dyn alone otherwise, since the .cu launches the others for that case only)")
    s.set_defaults(fn=cmd_tune_dynamic)

    s = sub.add_parser("record", help="measure a whole pruned space on the GPU and write a recording")
    common(s)
    s.add_argument("--out", default=None, help="output .json.gz")
    s.add_argument("--time", type=_seconds, default=None, help="stop after S seconds (resume later)")
    s.add_argument("--strategy", choices=("exhaustive", "random"), default="exhaustive",
                   help="order of measurement: random makes a time-limited recording a uniform sample")
    s.add_argument("--resume-from", default=None, metavar="REC",
                   help="a recording of an earlier (partial) run of this shape on this kind of GPU: its "
                        "measurements go into the database first and are not taken again")
    screen_arg(s)
    cluster_arg(s)
    s.set_defaults(fn=cmd_record)

    s = sub.add_parser(
        "bench", help="tuned vs default vs floor vs cuBLAS / torch int4, JSON under bench/results",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Tune each shape through the GPU worker (configs the database holds are not measured "
                    "again), then, in this one\nprocess and under the timing protocol, time the tuned kernel, "
                    "the template's default config and the\nbaselines, each checked against a float64 "
                    "reference first; write bench/results/<op>-<device>-<date>.json.\n\n"
                    + "".join(f"  {f.name:<11}{f.bench_help}\n" for f in FAMILIES.values() if f.benchmark)
                    + "  decode     the engine's tokens/s per model and format, quality, HF transformers "
                    "baselines\n\n"
                    "\"tuned\" is the fastest, re-timed in this process, of the database's best few configs.")
    benched = [f.name for f in FAMILIES.values() if f.benchmark]
    s.add_argument("op", nargs="?", default=benched[0], choices=[*benched, "decode"],
                   help=" | ".join(benched) + " | decode (the engine: tokens/s per model and format, quality, "
                        "matmul and attention sections, HF transformers baselines)")
    s.add_argument("--shapes", default=None, help="comma-separated shapes (default: those of BENCHMARKS.md "
                                                   "and the issue for the operator)")
    s.add_argument("--models", default="llama2-7b,stories15M,stories42M", help="decode: models to run")
    s.add_argument("--trials", type=_positive, default=None,
                   help="configs of each shape to have measured, those the database holds included (default 600; "
                        "decode: 64 configs per GEMV shape, 256 for a 7B)")
    s.add_argument("--strategy", choices=STRATEGY_NAMES, default="model")
    s.add_argument("--time-per-shape", type=_seconds, default=None,
                   help="tuning time limit per shape (s); hgemm: split over its templates (default: what fits "
                        "the run in about 9 minutes)")
    s.add_argument("--split", default=None, help="hgemm: each template's share of a shape's tuning time "
                                                 "(default wgmma=0.6,mma=0.2,wmma=0.2,wgmma_splitk=0.3,"
                                                 "stream=0.2; wgmma_splitk's share is taken out of wgmma's "
                                                 "and stream's out of wmma's where both serve a shape)")
    s.add_argument("--out", default="bench/results", help="folder of the results JSON (default bench/results)")
    s.add_argument("--db", default=None, help="SQLite database (default ~/.local/share/autosched/autosched.db)")
    s.set_defaults(fn=cmd_bench)

    s = sub.add_parser("report", help="tables and plots from bench/results (and the README table)")
    s.add_argument("--results", default="bench/results")
    s.add_argument("--plots", default="bench/plots")
    s.add_argument("--readme", default=None, help="README to update between the results markers")
    s.set_defaults(fn=cmd_report)

    s = sub.add_parser("export", help="write a tuned kernel as a standalone .cu with its launch parameters",
                       description="Write the kernel of one operator and shape as a standalone .cu file: the "
                                   "template's source, its instantiation and a launcher with the grid, block "
                                   "and shared memory the config needs.  The config is --config, else the best "
                                   "the database holds (for --device-key, else on any GPU), else the best of a "
                                   "shipped recording.")
    op_and_shape(s, "operator to export")
    s.add_argument("--config", default=None, help="config as a JSON object (default: the best known)")
    s.add_argument("--device-key", default=None, help="take the database's best for this GPU (autosched devices "
                                                      "prints a GPU's key)")
    s.add_argument("--db", default=None, help="SQLite database (default ~/.local/share/autosched/autosched.db)")
    s.add_argument("-o", "--output", default=None, help="the .cu to write (default <template>_<shape>.cu)")
    s.set_defaults(fn=cmd_export)

    s = sub.add_parser("convert", help="llama2.c checkpoint <-> Hugging Face Llama directory",
                       description="Convert model weights between the llama2.c format (a .bin file) and a "
                                   "Hugging Face Llama directory (config.json + model.safetensors).  The source "
                                   "is read by its kind (a directory is Hugging Face, a file llama2.c); the "
                                   "output is a llama2.c file where DEST ends in .bin or the source is a "
                                   "Hugging Face directory, else a Hugging Face directory.  It is written "
                                   "under a temporary name beside DEST and renamed when whole, so an "
                                   "interrupted conversion leaves nothing at DEST.")
    s.add_argument("source", help="a llama2.c .bin, or a Hugging Face directory")
    s.add_argument("dest", help="the file (.bin: llama2.c) or directory (Hugging Face) to write; never the source")
    s.add_argument("--force", action="store_true", help="write over DEST if it exists")
    s.set_defaults(fn=cmd_convert)

    s = sub.add_parser("tune-model", help="tune every kernel shape a model's decode step launches, in one run",
                       description="Tune every kernel shape the decode engine launches for MODEL (the fused "
                                   "matmuls with their epilogues, the classifier; whatever has a search space) "
                                   "in one run: the budget split by each kernel's share of the step, the largest "
                                   "first; then, on a GPU, verified in the engine's own step and stored.  Without "
                                   "a GPU it replays the shipped recordings and reports the shapes none holds.")
    s.add_argument("model", help="a llama2.c .bin, a Hugging Face Llama directory, or random:NAME "
                                 "(random:llama3.2-1b, random:tinyllama-1.1b, random:llama2-7b, ...)")
    s.add_argument("--formats", default="q4f16_1", help=f"comma-separated weight formats ({', '.join(FORMATS)}; "
                                                        "default q4f16_1)")
    s.add_argument("--budget", type=_minutes, default=10.0, metavar="MIN", help="minutes in all (default 10)")
    s.add_argument("--runner", choices=("auto", "gpu", "replay"), default="auto")
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--gpus", default=None, metavar="all|ID,...",
                   help="GPUs of this machine to measure on, one worker each (default all)")
    s.add_argument("--no-verify", action="store_true", help="skip the engine's step verification after tuning (GPU)")
    s.add_argument("--db", default=None, help="SQLite database (default ~/.local/share/autosched/autosched.db)")
    s.set_defaults(fn=cmd_tune_model)

    from autosched.engine.engine import VERIFY     # no torch at import: the engine imports it when built
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
    s.add_argument("--quant", choices=FORMATS, default="q4f16_1",
                   help="weight format of the matmuls (default q4f16_1)")
    s.add_argument("--max-tokens", type=_positive, default=128)
    s.add_argument("--stop-at-eos", action="store_true", help="stop at token 2 (llama2.c's EOS)")
    s.add_argument("--temperature", type=float, default=0.0,
                   help="0 (default): greedy, chosen on the GPU; > 0: sample on the host from softmax(logits / T)")
    s.add_argument("--top-p", type=float, default=0.9, help="with --temperature: nucleus mass kept (default 0.9)")
    s.add_argument("--seed", type=int, default=0, help="with --temperature: sampling seed")
    s.add_argument("--verify", type=_positive, default=VERIFY, metavar="N",
                   help="q4f16_1: per matmul shape, serve the fastest of the N best measured GEMV configs, "
                        f"timed in a CUDA graph and then inside the engine's own decode step (default {VERIFY}; 1 "
                        "serves the tuning winner as is)")
    s.add_argument("--reverify", action="store_true",
                   help="time the candidates in the decode step again, though the database holds their "
                        "times from an engine of the same model, device and candidates")
    s.add_argument("--step", choices=("kernels", "dataflow", "auto"), default="auto",
                   help="the decode step: auto (default: time both below in the step, serve the faster, store "
                        "the times), kernels (a kernel per matmul and attention, in a CUDA graph), or dataflow "
                        "(one persistent kernel a step, blocks waiting on counters, weights streamed ahead; fp16 "
                        "and q4f16_1 on sm_90)")
    s.add_argument("--db", default=None)
    s.set_defaults(fn=cmd_generate)
    return p


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """Warnings meant for the user (a recording skipped, a candidate that could not be timed) as one
    line, not Python's source-file-and-line form."""
    err_console.print(f"[yellow]warning:[/] {message}", highlight=False)


def main(argv=None) -> int:
    warnings.showwarning = _show_warning
    args = build_parser().parse_args(argv)
    try:
        return args.fn(args)
    except (ValueError, FileNotFoundError) as e:   # AutoschedError, ConfigError, WorkloadError: ValueErrors
        err_console.print(f"[red]error:[/] {e}")
        return 2
    except KeyboardInterrupt:
        err_console.print("interrupted: measurements so far are in the database; run again to resume")
        return 130


if __name__ == "__main__":
    sys.exit(main())
