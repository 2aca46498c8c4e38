"""What the GEMM experiment scripts share: the CUDA context on torch's stream under the seed's
timing protocol, one shape's operands on the GPU with its float64 reference, a rendered spec built,
checked against that reference and timed, and the rows printed as they come and written to $OUT.
Not an experiment itself."""
import json
import os

import numpy as np


class Session:
    """Device 0 current, torch's stream as a cuda.core Stream, a protocol Timer, a Builder."""

    def __init__(self):
        import torch
        from cuda.core import Device, Stream

        from autosched.build import Builder
        from autosched.device import query
        from autosched.measure.protocol import Timer
        self.info = query(0)
        self.dev = Device(0)
        self.dev.set_current()
        torch.cuda.init()
        self.stream = Stream.from_handle(torch.cuda.current_stream().cuda_stream)
        self.timer = Timer(self.dev, self.stream)
        self.builder = Builder()
        self.rows = []

    def __enter__(self):
        self.builder.__enter__()
        return self

    def __exit__(self, *exc):
        return self.builder.__exit__(*exc)

    def keep(self, row: dict) -> None:
        """One result row: printed now (a run cut short still shows it), written by write()."""
        print(json.dumps(row), flush=True)
        self.rows.append(row)

    def write(self, name: str) -> None:
        """The rows kept, with the device's name, as $OUT/`name` (the current folder without $OUT)."""
        with open(os.path.join(os.environ.get("OUT", "."), name), "w") as f:
            json.dump({"device": self.info.name, "rows": self.rows}, f, indent=1)

    def operands(self, shape: str) -> "Operands":
        return Operands(shape)

    def cublas_us(self, ops: "Operands", flush: bool = True) -> float:
        """Median microseconds of torch.matmul on the same operands (cuBLAS)."""
        import torch
        return float(np.median(self.timer.time(lambda: torch.matmul(ops.a, ops.bt), flush=flush)))

    def launchable(self, spec, ops: "Operands", label: str):
        """`spec` built and checked against float64 (raises if wrong), or the build's error text."""
        from autosched.benchmarks.common import Launchable, checked_launch
        from autosched.runtime import allow_dynamic_smem
        binary = self.builder.build(spec)
        if not binary.ok:
            return binary.error[-600:]
        k = Launchable(spec, binary, ops.inputs, ops.out, on_device={"A": ops.a, "B": ops.b})
        allow_dynamic_smem(k.kernel, spec.smem_bytes, self.dev.device_id)
        checked_launch(lambda s_: k.launch(s_), ops.w, ops.out, ops.ref, self.stream, label, ops.bound)
        return k

    def screen(self, ops: "Operands", template, configs, label: str) -> tuple[list, list]:
        """Each of `configs` rendered, built (in parallel), checked against float64 and timed once: every
        row ({"config", "us", "p10", "p90"} or {"config", "error"}), and the timed ones fastest first."""
        specs = [template.render(ops.w, c, self.info) for c in configs]
        list(self.builder.build_many(specs))
        rows = [{"config": c, **self.time(spec, ops, f"{label} {c}")} for c, spec in zip(configs, specs)]
        return rows, sorted((r for r in rows if "us" in r), key=lambda r: r["us"])

    def paired_with_cublas(self, ops: "Operands", template, named: dict, label: str) -> dict:
        """Each named config against cuBLAS on the same buffers in paired rounds
        (benchmarks.hgemm.paired_ratio: a, b, b, a): {name: {"config", "cublas_over_ours", "range",
        "ours_us", "cublas_us"} or {"config", "error"}}."""
        import torch

        from autosched.benchmarks.hgemm import paired_ratio
        out = {}
        for name, cfg in named.items():
            k = self.launchable(template.render(ops.w, cfg, self.info), ops, f"{label} {name}")
            if isinstance(k, str):
                out[name] = {"config": cfg, "error": k}
                continue
            p = paired_ratio(self.timer, lambda: k.launch(self.stream), lambda: torch.matmul(ops.a, ops.bt, out=ops.out))
            out[name] = {"config": cfg, "cublas_over_ours": p["pct_of_cublas"] / 100.0,
                         "range": [p["pct_min"] / 100.0, p["pct_max"] / 100.0],
                         "ours_us": float(np.median(p["us"])), "cublas_us": float(np.median(p["cublas_us"]))}
        return out

    def alternate(self, row: dict, ops: "Operands", variants, rounds: int, label: str) -> None:
        """`rounds` rounds of cuBLAS then each (name, spec) of `variants`, timed in turn (so a drift of
        the clocks lands on all of them), appended to row["cublas_us"] and row[name]; then kept."""
        for _ in range(rounds):
            row.setdefault("cublas_us", []).append(self.cublas_us(ops))
            for name, spec in variants:
                row.setdefault(name, []).append(self.time(spec, ops, f"{label} {name}"))
        self.keep(row)

    def screen_then_alternate(self, ops: "Operands", template, configs, name: str, baselines, rounds: int,
                              keep: int = 4, **extra) -> dict:
        """`configs` of `template` on `ops`, built side by side, each checked and timed once; then the
        `keep` fastest (named "`name` <config>"), the (name, spec) pairs of `baselines` and cuBLAS in
        `rounds` alternating rounds (alternate).  The row, with `extra` beside the screen's results."""
        w = ops.w
        specs = [template.render(w, c, self.info) for c in configs]
        list(self.builder.build_many(specs))        # in parallel; time() then finds them in the cache
        screen = [{"config": c, **self.time(spec, ops, f"{w.shape_str} {name} {c}")} for c, spec in zip(configs, specs)]
        ok = sorted((r for r in screen if "us" in r), key=lambda r: r["us"])
        row = {"shape": w.shape_str, "screened": len(screen), "failed": [r for r in screen if "us" not in r],
               "screen_best": ok[:8], **extra}
        variants = [(f"{name} {r['config']}", template.render(w, r["config"], self.info)) for r in ok[:keep]]
        self.alternate(row, ops, variants + list(baselines), rounds, w.shape_str)
        return row

    def wgmma_baselines(self, w, configs) -> list:
        """(name, spec) of each of hgemm_wgmma's `configs` that its space for `w` holds: the baselines a
        sweep of one of its variants times beside cuBLAS."""
        from autosched.templates import HgemmWgmmaTemplate
        wg = HgemmWgmmaTemplate()
        space = wg.space(w, self.info)
        return [(f"wgmma {c}", wg.render(w, c, self.info)) for c in configs if space.contains(c)]

    def time(self, spec, ops: "Operands", label: str, flush: bool = True) -> dict:
        """{"us", "p10", "p90"} of `spec` under the protocol after its check, or {"error"}."""
        k = self.launchable(spec, ops, label)
        if isinstance(k, str):
            return {"error": k}
        times = self.timer.time(lambda: k.launch(self.stream), flush=flush)
        return {"us": float(np.median(times)), "p10": float(np.percentile(times, 10)),
                "p90": float(np.percentile(times, 90))}


class Operands:
    """An hgemm shape's A and B on the GPU (B as stored and as torch.matmul wants it), an output
    buffer, and the float64 reference with its error bound."""

    def __init__(self, shape: str):
        import torch

        from autosched.workloads import Hgemm
        self.w = Hgemm.from_shape(shape)
        self.inputs = self.w.inputs(1)
        self.ref, self.bound = self.w.reference(self.inputs), self.w.error_bound(self.inputs)
        self.a = torch.from_numpy(np.ascontiguousarray(self.inputs["A"])).cuda()
        self.b = torch.from_numpy(np.ascontiguousarray(self.inputs["B"])).cuda()
        self.bt = self.b.t() if self.w.b_col else self.b
        self.out = torch.empty((self.w.M, self.w.N), dtype=torch.float16, device="cuda")


class RunnerKit:
    """What the experiments that time through the tuner's GpuRunner share (its worker processes, the
    inputs drawn as a tuning draws them): the runner, a Builder, cuBLAS timed in this process on
    torch's stream under the protocol, and the payload written to $OUT at the end.

        with RunnerKit() as kit:
            kit.measure_us(spec)                     # the kernel's median through the runner (None if not ok)
            kit.cublas_us(*kit.operands(M, N, K))    # torch.matmul on fresh (M, K) and (N, K) fp16 operands
            kit.write("name.json", {...})
    """

    def __init__(self):
        import torch
        from cuda.core import Device, Stream

        from autosched.build import Builder
        from autosched.measure.gpu import GpuRunner
        from autosched.measure.protocol import Protocol, Timer
        self.runner = GpuRunner()
        self.info = self.runner.device_info
        self.builder = Builder()
        dev = Device(0)
        dev.set_current()
        self.timer = Timer(dev, Stream.from_handle(torch.cuda.current_stream().cuda_stream), Protocol())

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.timer.close()
        self.runner.close()
        self.builder.close()
        return False

    def measure_us(self, spec, binary=None):
        """The runner's median of `spec` (built here unless `binary` is given), None if it failed."""
        m = self.runner.measure(spec, binary if binary is not None else self.builder.build(spec))
        return m.median_us if m.ok else None

    def operands(self, M: int, N: int, K: int, rows_of=None):
        """(x, w, y) for torch.matmul(x, w.t(), out=y); `rows_of` (M', N'): x and w as the first rows
        of larger tensors."""
        import torch
        big_m, big_n = rows_of or (M, N)
        x = torch.randn(big_m, K, device="cuda", dtype=torch.float16)[:M]
        w = torch.randn(big_n, K, device="cuda", dtype=torch.float16)[:N]
        return x, w, torch.empty(M, N, device="cuda", dtype=torch.float16)

    def cublas_us(self, x, w, y) -> float:
        import torch
        return self.timer.summary(lambda: torch.matmul(x, w.t(), out=y))["median_us"]

    def write(self, name: str, payload: dict) -> None:
        """`payload` with the device's name as $OUT/`name` (the current folder without $OUT)."""
        with open(os.path.join(os.environ.get("OUT", "."), name), "w") as f:
            json.dump({"device": self.info.name, **payload}, f, indent=1)
