"""What the dyn-splitk and dyn-stream GPU stages' scripts share: micro-kernels (split-K and plain wgmma,
hgemm_stream) served for a dynamic M by ops.HgemmDispatch from a handmade result (no tuning), and the
float64 check of a sequence of calls."""

WGS, WG = "hgemm_wgmma_splitk", "hgemm_wgmma"
TILES = [(64, 64, 1, 4), (64, 128, 1, 4), (128, 64, 2, 6)]     # (bm, bn, consumers, stages), 128B swizzle


def config(bm, bn, consumers, stages, split_k=1):
    c = {"bm": bm, "bn": bn, "consumers": consumers, "swizzle": 128, "stages": stages, "group": 1}
    return {**c, "split_k": split_k} if split_k > 1 else c


def dispatcher(builder, N, K, kernels, tops, m_max=4096, backend="wgmma"):
    """An HgemmDispatch serving kernels[i] ((family, config)) up to tops[i], loaded.  Needs the
    dynamic switch of a family on (AUTOSCHED_DYN_SPLIT_K=1, AUTOSCHED_DYN_STREAM=1) for its kernels."""
    from autosched.device import query
    from autosched.dynamic.handmade import handmade_result
    from autosched.dynamic.workload import DynamicWorkload
    from autosched.ops import HgemmDispatch
    dev = query(0)
    dw = DynamicWorkload.parse("hgemm", f"Mx{N}x{K}_bt", (1, m_max))
    g = HgemmDispatch(N, K, dev, result=handmade_result(dw, kernels, tops, dev.key), backend=backend, m_max=m_max)
    g.load(builder)
    return g


def max_error(y, x, w) -> tuple[float, float]:
    """(largest |y - x . w^T| against float64, the bound: 1% of the largest |value|); NaN counts as inf."""
    import torch
    want = x.double() @ w.double().t()
    err = (y.double() - want).abs()
    err = float(torch.where(torch.isfinite(err), err, torch.full_like(err, float("inf"))).max())
    return err, 1e-2 * float(want.abs().max())


def check_sequence(g, stream, N, K, ms) -> int:
    """g called for each M of `ms` in a row on one stream (its workspace grown and shrunk), each output
    NaN-poisoned before and checked against float64 after; a line a call; the number wrong."""
    import torch
    bad = 0
    w = (torch.randn((N, K), device="cuda") / K ** 0.5).half()
    for M in ms:
        x = torch.randn((M, K), device="cuda").half()
        y = torch.full((M, N), float("nan"), device="cuda").half()
        g(stream, x, w, y, M)
        torch.cuda.synchronize()
        err, bound = max_error(y, x, w)
        ok = err <= bound
        bad += not ok
        print(f"M={M:4d} {g.family(M):18s} {g.config(M)} max error {err:.3g} (bound {bound:.3g})"
              f"{'' if ok else ' WRONG'}", flush=True)
    print(f"{len(ms) - bad} of {len(ms)} launches right, {g.workspaces.allocations} workspace grants; "
          f"checked {len(ms)} configs")
    return bad
