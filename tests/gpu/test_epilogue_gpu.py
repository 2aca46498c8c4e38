"""On a GPU: each decode-step epilogue (kernels/epilogue.cuh) of the q4f16_1 GEMV and of the dense
GEMV against a float64 reference on the same weights: norm scale, residual update with its sum of
squares, and SiLU x up over interleaved gate/up rows."""

import numpy as np
import pytest

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")

DIM, EPS = 256, 1e-5


def dequantized(m) -> np.ndarray:
    """The float64 matrix a loaded Matmul multiplies by (one layer, fmt-specific packing undone)."""
    from autosched.models.quantize import roundtrip
    return roundtrip(m.source.cpu().numpy(), m.fmt).astype(np.float64)


def run_epilogue(m, epilogue: str, seed: int):
    """(got, want) for one launch of Matmul m with `epilogue`, on random inputs."""
    from cuda.core import Stream
    from autosched.runtime import ptr
    gen = torch.Generator(device="cuda").manual_seed(seed)
    act = torch.float32 if m.fmt == "fp32" else torch.float16
    v = torch.randn(m.k, device="cuda", generator=gen).to(act)
    x = torch.randn(m.n, device="cuda", generator=gen)
    ss = torch.tensor([0.0, 0.0], dtype=torch.float64, device="cuda")
    ss[0] = float(m.k) * 0.7                       # the norm's input: mean square 0.7
    out = torch.full((m.n // 2 if epilogue == "norm_swiglu" else m.n,), float("nan"), dtype=act, device="cuda")
    x0 = x.clone()
    args = (ptr(x), ptr(ss), ptr(ss) + np.uint64(8), np.int32(m.k if epilogue != "residual" else DIM), np.float32(EPS))
    m(Stream.from_handle(torch.cuda.current_stream().cuda_stream), 0, out, v, args)
    torch.cuda.synchronize()
    c = dequantized(m) @ v.double().cpu().numpy()
    scale = 1.0 / np.sqrt(0.7 + EPS)
    if epilogue == "norm":
        return {"out": (out, c * scale)}
    if epilogue == "norm_swiglu":
        g, u = c[0::2] * scale, c[1::2] * scale
        return {"out": (out, g / (1 + np.exp(-g)) * u)}
    new = x0.double().cpu().numpy() + c
    # the sum of squares of the residual as the kernel left it (its own rounding of x checked above)
    return {"out": (out, new), "x": (x, new), "ss": (ss[1:], np.array([np.sum(x.double().cpu().numpy() ** 2)]))}



@pytest.mark.parametrize("fmt", ["q4f16_1", "fp16", "int8", "fp32"])
@pytest.mark.parametrize("epilogue", ["norm", "residual", "norm_swiglu"])
def test_epilogue_matches_float64(builder, fmt, epilogue):
    from autosched.device import query
    from autosched.engine.matmul import Matmul
    from autosched.templates import GemvQ4F16Template
    from autosched.workloads import GemvQ4F16
    info = query(0)
    n, k = 1000, DIM                           # 1000 rows: q4 blocks of 16+ rows leave a tail
    act = "float" if fmt == "fp32" else "half"
    if fmt == "q4f16_1":
        # corner configs of the space that pair rows (and one whose last block is partial)
        t = GemvQ4F16Template()
        from autosched.templates.gemv_q4f16 import extreme_configs
        cfgs = [c for c in extreme_configs(t.space(GemvQ4F16(n, k), info).enumerate())
                if epilogue != "norm_swiglu" or c["ts"] * c["tile_s"] % 2 == 0][::4]
        assert any(n % (c["ts"] * c["tile_s"]) for c in cfgs)
    else:
        cfgs = [None]
    w = torch.randn((n, k), device="cuda", generator=torch.Generator(device="cuda").manual_seed(1)) / 16
    tol = 1e-4 if fmt == "fp32" else 2e-2
    for i, cfg in enumerate(cfgs):
        m = Matmul("t", fmt, n, k, act, act, info, config=cfg, epilogue=epilogue)
        m.load(builder)
        m.add_layer(w)
        m.source = w
        for name, (got, want) in run_epilogue(m, epilogue, seed=i).items():
            got = got.double().cpu().numpy()
            assert np.all(np.isfinite(got)), (fmt, epilogue, cfg, name)
            err = np.abs(got - want).max() / np.abs(want).max()
            assert err < (1e-6 if name == "ss" else tol), (fmt, epilogue, cfg, name, err)
