"""The device checks' compute-sanitizer harness: one Python process a check, each output NaN-poisoned
before and checked after; exit code 1 if any check failed.

    compute-sanitizer --tool memcheck python3 scripts/sanitize.py FAMILY [SHAPE ...]   # gemv-q4f16, sgemm, hgemm
    compute-sanitizer --tool racecheck python3 scripts/sanitize.py dyn-splitk | dyn-stream | engine [FORMAT ...]
                                                                   | reference | prefill-attn

FAMILY: each template's sanitizer picks (Template.sanitizer_picks: the corners of its space) on the
family's ragged shapes, checked against float64; PER_TEMPLATE=N keeps the first N, TEMPLATES=a,b runs
only those.  dyn-splitk, dyn-stream: micro-kernels served for a dynamic M by ops.HgemmDispatch on a
ragged shape (N = 264, K = 520), Ms that grow and shrink the shared workspace (switch on:
AUTOSCHED_DYN_SPLIT_K=1, AUTOSCHED_DYN_STREAM=1).  engine, reference, prefill-attn: below.
"""
import os
import sys

from dyn_splitk_common import TILES, WG, WGS, check_sequence, config, dispatcher  # (scripts/ is sys.path[0])

MS = [100, 1, 65, 300, 33, 100]
STREAM_KERNELS = [
    {"rw": 2, "wn": 2, "wk": 2, "mt": 8, "kw": 32, "stages": 4, "split_k": 4},
    {"rw": 1, "wn": 4, "wk": 4, "mt": 64, "kw": 32, "stages": 3, "split_k": 2},
    {"rw": 1, "wn": 2, "wk": 4, "mt": 16, "kw": 64, "stages": 6, "split_k": 1},
]


def family_configs(name, shapes, per_template=None, only=None):
    """Each template's sanitizer picks of registry family `name` on its ragged shapes (or `shapes`)."""
    from autosched.build import Builder
    from autosched.measure.protocol import Protocol
    from autosched.measure.worker import Worker
    from autosched.registry import family
    fam = family(name)
    if fam.sanitize_picks is None:
        print(f"{fam.name} names no sanitizer configs in the registry", file=sys.stderr)
        return 2
    w0 = Worker(0, Protocol(flush_bytes=1 << 20, warmup=0, repeat=1))
    bad = 0
    with Builder() as b:
        for shape in shapes or fam.sanitize_shapes:
            w = fam.parse(shape)
            for t in fam.templates_for(w):
                if only and t.family not in only:
                    continue
                cfgs = fam.sanitize_picks(t, w, w0.info)[:per_template]
                specs = [t.render(w, c, w0.info) for c in cfgs]
                for c, s, binary in zip(cfgs, specs, b.build_many(specs)):
                    m = w0.measure(s, binary)
                    bad += not m.ok
                    print(w.key, t.family, s.smem_bytes, "B", m.status.value, c, m.error[:200], flush=True)
                print(f"{w.key} {t.family}: {len(cfgs)} configs", flush=True)
    return 1 if bad else 0


def dispatch_sequence(which: str) -> int:
    """split_k 8, 4 and 3 on dyn_splitk_common's tiles beside a plain wgmma one, or STREAM_KERNELS."""
    import torch
    from cuda.core import Device, Stream

    from autosched.build import Builder
    Device(0).set_current()
    s = Stream.from_handle(torch.cuda.current_stream().cuda_stream)
    N, K = 264, 520
    if which == "dyn-splitk":
        kernels, tops, backend = ([(WGS, config(*t, split_k=sk)) for t, sk in zip(TILES, (8, 4, 3))]
                                  + [(WG, config(*TILES[0]))], [40, 90, 200], "wgmma")
    else:
        kernels, tops, backend = [("hgemm_stream", c) for c in STREAM_KERNELS], [40, 90], "mma"
    with Builder() as b:
        g = dispatcher(b, N, K, kernels, tops, m_max=512, backend=backend)
        return 1 if check_sequence(g, s, N, K, MS) else 0


def engine(formats):
    """The decode engine's kernels eagerly (no graph) on a small GQA model: every weight format, split-KV
    attention past 4 slices of 64 positions, programmatic launch on, q4f16_1 streaming gate_up into the L2."""
    import numpy as np

    from autosched.build import Builder
    from autosched.engine.engine import Engine, gate_up_prefetch_bytes, matmul_shapes
    from autosched.models.llama2c import LlamaConfig, random_weights
    CFG = LlamaConfig(dim=128, hidden_dim=352, n_layers=2, n_heads=4, n_kv_heads=2, vocab_size=512, seq_len=512)
    w = random_weights(CFG, 9)
    tokens = np.random.default_rng(1).integers(0, CFG.vocab_size, 270)
    with Builder() as b:
        for fmt in formats:
            eng = Engine(CFG, w, fmt, builder=b, graphs=False, splits=5)
            if fmt == "q4f16_1":
                eng.attn_prefetch = gate_up_prefetch_bytes(*matmul_shapes(CFG)["gate_up"], fmt)
            for t in tokens:
                logits = eng.step(int(t))
            print(fmt, "ok", float(logits.abs().max()), flush=True)
    return 0


def reference(args) -> int:
    """The worker's own kernels: float64 products on ragged extents and the output check of FP16, BF16
    and FP32 outputs, each against numpy."""
    import numpy as np
    from cuda.bindings import driver
    from cuda.core import Device

    from autosched.device import query
    from autosched.measure.reference_gpu import GpuChecker, GpuProducts, host_products
    from autosched.runtime import check
    dev = Device(0)
    dev.set_current()
    info = query(0)
    stream = dev.create_stream()
    products, checker = GpuProducts(dev, stream, info.arch), GpuChecker(dev, stream, info.sm_count, info.arch)
    rng = np.random.default_rng(0)
    bad = 0
    for M, N, K in [(1, 1, 1), (65, 129, 17), (200, 72, 1000), (64, 64, 16)]:
        a, bt = rng.standard_normal((M, K)).astype(np.float32), rng.standard_normal((N, K)).astype(np.float32)
        ref, _ = products(a, bt)
        want, _ = host_products(a, bt)
        ok = np.allclose(ref, want, rtol=1e-12, atol=1e-12)
        bound = 1e-2 * np.abs(ref) + 1e-2
        for dt in (np.float16, np.uint16, np.float32):
            out = (ref.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16) if dt is np.uint16 else ref.astype(dt)
            buf = dev.allocate(out.nbytes, stream=stream)
            stream.sync()
            check(driver.cuMemcpyHtoD(int(buf.handle), np.ascontiguousarray(out).ctypes.data, out.nbytes))
            r, b = checker.upload(ref), checker.upload(bound)
            got = checker(buf, out.dtype, out.size, r, b)
            for x in (buf, r, b):
                x.close()
            ok = ok and got.ok
        print(f"{M}x{N}x{K}: {'ok' if ok else 'MISMATCH'}")
        bad += not ok
    return 1 if bad else 0


def prefill_attn(args) -> int:
    """The tensor-core prefill attention on small ragged cases (head sizes 32 and 128, prompts of 1 and 77
    tokens after 5), each output against the CUDA-core kernel's, the cache NaN past the prompt."""
    import numpy as np
    import torch
    from cuda.core import Device, Stream

    from autosched.build import Builder
    from autosched.device import query
    from autosched.engine.engine import rope_table
    from autosched.launch import LoadedKernel
    from autosched.models.llama2c import LlamaConfig
    from autosched.runtime import ptr
    from autosched.templates import prefill as pk
    Device(0).set_current()
    info = query(0)
    s = Stream.from_handle(torch.cuda.current_stream().cuda_stream)
    i32 = np.int32
    bad = 0
    with Builder() as b:
        for hs in (32, 128):
            n_heads, n_kv = 8, 2
            cfg = LlamaConfig(dim=n_heads * hs, hidden_dim=64, n_layers=1, n_heads=n_heads, n_kv_heads=n_kv,
                              vocab_size=64, seq_len=160)
            q_dim, kv_dim = n_heads * hs, n_kv * hs
            cs = rope_table(cfg, "cuda")
            ref = LoadedKernel(pk.attention_spec(hs, info.arch), b)
            for T, pos0 in ((1, 0), (77, 5)):
                g = torch.Generator(device="cuda").manual_seed(T)
                qkv = torch.randn((T, q_dim + 2 * kv_dim), device="cuda", generator=g).half()
                kc = torch.full((cfg.seq_len, kv_dim), float("nan"), device="cuda").half()
                vc = kc.clone()
                kc[:pos0 + T] = torch.randn((pos0 + T, kv_dim), device="cuda", generator=g).half()
                vc[:pos0 + T] = torch.randn((pos0 + T, kv_dim), device="cuda", generator=g).half()
                args = (ptr(qkv), ptr(kc), ptr(vc), ptr(cs), i32(pos0), i32(T), i32(n_heads), i32(kv_dim),
                        i32(n_heads // n_kv))
                want = torch.full((T, q_dim), float("nan"), device="cuda").half()
                ref.launch(s, pk.attention_grid(T, n_heads), ptr(want), *args)
                for bq in pk.TC_BQS:
                    k = LoadedKernel(pk.tc_attention_spec(hs, info.arch, bq), b)
                    out = torch.full((T, q_dim), float("nan"), device="cuda").half()
                    k.launch(s, pk.attention_grid(T, n_heads, bq), ptr(out), *args)
                    torch.cuda.synchronize()
                    err = float((out.float() - want.float()).abs().max())
                    ok = bool(torch.isfinite(out).all()) and err < 5e-3
                    bad += not ok
                    print(f"prefill_attention_tc<{hs}, {bq}> T={T} pos0={pos0}: max |diff| vs CUDA cores {err:.1e} "
                          f"{'ok' if ok else 'WRONG'}", flush=True)
    print("all ok" if not bad else f"{bad} WRONG", flush=True)
    return 1 if bad else 0


MODES = {"dyn-splitk": lambda args: dispatch_sequence("dyn-splitk"),
         "dyn-stream": lambda args: dispatch_sequence("dyn-stream"),
         "engine": lambda args: engine(args or ["fp32", "fp16", "int8", "q4f16_1"]),
         "reference": reference, "prefill-attn": prefill_attn}

if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    mode, rest = sys.argv[1], sys.argv[2:]
    if mode in MODES:
        sys.exit(MODES[mode](rest))
    sys.exit(family_configs(mode, rest, int(os.environ.get("PER_TEMPLATE", "0")) or None,
                            [t for t in os.environ.get("TEMPLATES", "").split(",") if t] or None))
