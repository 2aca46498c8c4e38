"""What the GPU tests of the GEMMs share: the float64 check, a dispatcher of handmade micro-kernels,
torch's current stream for cuda.core (the dispatched GEMMs: prefill on wgmma, dynamic split-K and
stream), and a template's configs measured through the worker (the wgmma variants)."""


def assert_matches_float64(y, x, w) -> None:
    """y (M, N) against x (M, K) . w (N, K)^T in float64: finite, within 1% of the largest |value|."""
    import torch
    want = x.double() @ w.double().t()
    assert torch.isfinite(y).all()
    torch.testing.assert_close(y.double(), want, rtol=0, atol=1e-2 * float(want.abs().max()))


def assert_serves_in_turn(g, w, ms, gen=None) -> list[int]:
    """g (an HgemmDispatch) called for each M of `ms` in turn on torch's stream, x drawn in w's dtype
    and y poisoned with NaN before, checked against float64 after; the dispatcher's workspace grants
    after each call."""
    import torch
    s, (n, k), grants = current_stream(), w.shape, []
    for M in ms:
        x = torch.randn((M, k), device="cuda", generator=gen).to(w.dtype)
        y = torch.full((M, n), float("nan"), device="cuda", dtype=w.dtype)
        g(s, x, w, y, M)
        torch.cuda.synchronize()
        assert_matches_float64(y, x, w)
        grants.append(g.workspaces.allocations)
    return grants


def scaled_weight(n: int, k: int, dtype: str = "fp16"):
    """(w, gen): an (n, k) weight with entries N(0, 1/k) in `dtype` (so x . w^T stays near unit size),
    and the CUDA generator, seeded n + k, that drew it and draws the x that follow."""
    import torch
    gen = torch.Generator(device="cuda").manual_seed(n + k)
    w = torch.randn((n, k), device="cuda", generator=gen) / k ** 0.5
    return w.to(torch.bfloat16 if dtype == "bf16" else torch.float16), gen


def handmade_dispatcher(builder, N, K, kernels, tops, *, backend, m_max=2048, dtype="fp16"):
    """An ops.HgemmDispatch serving kernels[i] ((family, config)) for M up to tops[i] (the last one
    the rest of 1..m_max), loaded through `builder`.  A family behind a dynamic switch needs it on."""
    from autosched.device import query
    from autosched.dynamic.handmade import handmade_result
    from autosched.dynamic.workload import DynamicWorkload
    from autosched.ops import HgemmDispatch
    dev = query(0)
    dw = DynamicWorkload.parse("hgemm", f"Mx{N}x{K}_bt" + ("_bf16" if dtype == "bf16" else ""), (1, m_max))
    g = HgemmDispatch(N, K, dev, result=handmade_result(dw, kernels, tops, dev.key), backend=backend,
                      m_max=m_max, dtype=dtype)
    g.load(builder)
    return g


def current_stream():
    """torch's current CUDA stream as a cuda.core Stream."""
    import torch
    from cuda.core import Stream
    return Stream.from_handle(torch.cuda.current_stream().cuda_stream)


def measure_each(template, cases, cache_dir) -> list:
    """Every (info, workload, config) that cases(device) yields, rendered by `template`, built in
    parallel, then checked against float64, timed and checked again by one GPU worker: [(info + (the
    kernel's name,), Measurement or None)].  Skips the test module where the GPU has no such kernel."""
    import pytest

    from autosched.build import BuildCache, Builder
    from autosched.measure.gpu import GpuRunner
    from autosched.measure.protocol import Protocol
    with GpuRunner(protocol=Protocol(flush_bytes=1 << 24, warmup=2, repeat=10), timeout_s=60) as runner, \
            Builder(cache=BuildCache(cache_dir)) as builder:
        dev = runner.device_info
        if template.device_refuses(dev):
            pytest.skip(template.device_refuses(dev))
        items, what = [], {}
        for info, w, c in cases(dev):
            spec = template.render(w, c, dev)
            what[len(items)] = (*info, spec.name_expression)
            items.append((len(items), spec, builder.submit(spec)))
        results = dict(runner.measure_stream(items))
    return [(info, results.get(i)) for i, info in what.items()]


def measure_picks(template, shapes, picks, cache_dir) -> list:
    """measure_each over picks(template, workload, device) of each hgemm shape, each row's info (shape,
    config, the config's shared memory)."""
    from autosched.workloads import Hgemm

    def cases(dev):
        for shape in shapes:
            w = Hgemm.from_shape(shape)
            yield from (((shape, c, template.smem(c)), w, c) for c in picks(template, w, dev))
    return measure_each(template, cases, cache_dir)


def assert_shape_ok(measured, shape: str, at_least: int) -> list:
    """measure_picks' rows of `shape`: at least `at_least` of them, every one passed (assert_all_ok)."""
    rows = [(info, m) for info, m in measured if info[0] == shape]
    assert len(rows) >= at_least, f"{shape}: {len(rows)} configs picked"
    assert_all_ok(rows)
    return rows


def assert_all_ok(rows) -> None:
    """Of measure_each's rows: none lost (the worker never answered), none failed (the first few
    failures shown with their error)."""
    lost = [info for info, m in rows if m is None]
    assert not lost, f"{len(lost)} configs never came back, e.g. {lost[:2]}"
    bad = [(*info, m.status.value, f"max_abs_err={m.max_abs_err}", (m.error or "")[:300]) for info, m in rows
           if not m.ok]
    assert not bad, f"{len(bad)} of {len(rows)} failed:\n" + "\n".join(map(str, bad[:6]))
