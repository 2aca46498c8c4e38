"""What the dyn-splitk GPU stage's scripts share: split-K and plain wgmma micro-kernels served for a
dynamic M by ops.HgemmDispatch from a handmade result (no tuning), and the float64 check."""

WGS, WG = "hgemm_wgmma_splitk", "hgemm_wgmma"
TILES = [(64, 64, 1, 4), (64, 128, 1, 4), (128, 64, 2, 6)]     # (bm, bn, consumers, stages), 128B swizzle


def config(bm, bn, consumers, stages, split_k=1):
    c = {"bm": bm, "bn": bn, "consumers": consumers, "swizzle": 128, "stages": stages, "group": 1}
    return {**c, "split_k": split_k} if split_k > 1 else c


def dispatcher(builder, N, K, kernels, tops, m_max=4096):
    """An HgemmDispatch serving kernels[i] ((family, config)) up to tops[i], loaded.  Needs the
    dynamic split-K switch on (AUTOSCHED_DYN_SPLIT_K=1) for split-K kernels."""
    from autosched.device import query
    from autosched.dynamic.handmade import handmade_result
    from autosched.dynamic.workload import DynamicWorkload
    from autosched.ops import HgemmDispatch
    dev = query(0)
    dw = DynamicWorkload.parse("hgemm", f"Mx{N}x{K}_bt", (1, m_max))
    g = HgemmDispatch(N, K, dev, result=handmade_result(dw, kernels, tops, dev.key), backend="wgmma", m_max=m_max)
    g.load(builder)
    return g


def max_error(y, x, w) -> tuple[float, float]:
    """(largest |y - x . w^T| against float64, the bound: 1% of the largest |value|); NaN counts as inf."""
    import torch
    want = x.double() @ w.double().t()
    err = (y.double() - want).abs()
    err = float(torch.where(torch.isfinite(err), err, torch.full_like(err, float("inf"))).max())
    return err, 1e-2 * float(want.abs().max())
