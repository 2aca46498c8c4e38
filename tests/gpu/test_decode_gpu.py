"""On a GPU: the decode kernels against the float64 reference ops (llama2.c semantics)."""

import numpy as np
import pytest

from autosched.models.reference import rmsnorm, rope

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    torch = pytest.importorskip("torch")
    from cuda.core import Device, LaunchConfig, ObjectCode, Stream, launch

    from autosched.build import BuildCache, Builder
    from autosched.device import query
    info = query(0)
    Device(0).set_current()
    builder = Builder(cache=BuildCache(tmp_path_factory.mktemp("cache")))
    stream = Stream.from_handle(torch.cuda.current_stream().cuda_stream)

    def run(spec, *args):
        b = builder.build(spec)
        assert b.ok, b.error
        k = ObjectCode.from_cubin(b.cubin, symbol_mapping={spec.name_expression: b.symbol.encode()}).get_kernel(
            spec.name_expression)
        launch(stream, LaunchConfig(grid=spec.grid, block=spec.block, shmem_size=spec.smem_bytes), k, *args)
        torch.cuda.synchronize()

    yield torch, info, run
    builder.close()


def t32(torch, a):
    return torch.from_numpy(np.ascontiguousarray(a, dtype=np.float32)).cuda()


def p(x):
    return np.uint64(x.data_ptr())


@pytest.mark.parametrize("dim, threads", [(288, 32), (4096, 1024), (1000, 256)])
def test_rmsnorm(env, dim, threads):
    torch, info, run = env
    from autosched.templates.decode import rmsnorm_spec
    rng = np.random.default_rng(dim)
    x, w = rng.standard_normal(dim), rng.standard_normal(dim)
    out = torch.full((dim,), float("nan"), device="cuda")
    run(rmsnorm_spec(dim, info.arch, threads), p(out), p(t32(torch, x)), p(t32(torch, w)), np.int32(dim),
        np.float32(1e-5))
    np.testing.assert_allclose(out.cpu().numpy(), rmsnorm(x, w, 1e-5), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("pos", [0, 7, 1000])
def test_rope_rotates_q_and_the_kv_part_of_k(env, pos):
    torch, info, run = env
    from autosched.templates.decode import rope_spec
    hs, q_dim, kv_dim = 64, 512, 128                      # 8 query heads, 2 kv heads
    rng = np.random.default_rng(pos)
    q, k = rng.standard_normal(q_dim), rng.standard_normal(kv_dim)
    qd, kd = t32(torch, q), t32(torch, k)
    run(rope_spec(q_dim, info.arch), p(qd), p(kd), np.int32(pos), np.int32(q_dim), np.int32(kv_dim),
        np.int32(hs), np.float32(10000.0))
    # fp32 sincos of angles up to ~1000 rad: absolute error ~1e-4
    np.testing.assert_allclose(qd.cpu().numpy(), rope(q, pos, hs, 10000.0), atol=5e-4)
    np.testing.assert_allclose(kd.cpu().numpy(), rope(k, pos, hs, 10000.0), atol=5e-4)


def test_silu_mul_and_residual_add(env):
    torch, info, run = env
    from autosched.templates.decode import elementwise_spec
    rng = np.random.default_rng(1)
    g, u, x = rng.standard_normal(11008), rng.standard_normal(11008), rng.standard_normal(11008)
    gd, ud, xd = t32(torch, g), t32(torch, u), t32(torch, x)
    run(elementwise_spec("silu_mul", 11008, info.arch), p(gd), p(ud), np.int32(11008))
    np.testing.assert_allclose(gd.cpu().numpy(), g / (1 + np.exp(-g)) * u, rtol=1e-5, atol=1e-6)
    run(elementwise_spec("residual_add", 11008, info.arch), p(xd), p(ud), np.int32(11008))
    np.testing.assert_allclose(xd.cpu().numpy(), x + u, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("pos, threads", [(0, 32), (255, 128), (1500, 256)])
def test_attention_over_the_cache(env, pos, threads):
    torch, info, run = env
    from autosched.templates.decode import attention_spec
    n_heads, n_kv, hs, seq = 8, 2, 64, 2048
    rng = np.random.default_rng(pos)
    q = rng.standard_normal(n_heads * hs)
    kc, vc = rng.standard_normal((seq, n_kv * hs)), rng.standard_normal((seq, n_kv * hs))
    out = torch.full((n_heads * hs,), float("nan"), device="cuda")
    run(attention_spec(n_heads, seq, info.arch, threads), p(out), p(t32(torch, q)), p(t32(torch, kc)),
        p(t32(torch, vc)), np.int32(pos), np.int32(n_kv * hs), np.int32(hs), np.int32(n_heads // n_kv))
    want = np.empty(n_heads * hs)
    for h in range(n_heads):
        kv = (h // (n_heads // n_kv)) * hs
        s = kc[:pos + 1, kv:kv + hs] @ q[h * hs:(h + 1) * hs] / np.sqrt(hs)
        a = np.exp(s - s.max())
        want[h * hs:(h + 1) * hs] = (a / a.sum()) @ vc[:pos + 1, kv:kv + hs]
    np.testing.assert_allclose(out.cpu().numpy(), want, rtol=1e-4, atol=1e-5)
