"""A lane-by-lane numpy twin of kernels/prefill_attention_tc.cuh, run on the CPU against a float64
causal attention: the block order, the ldmatrix row addresses each lane supplies, the score-to-P
fragment reuse, the causal mask and skipped tiles, the quad reductions and the online softmax.

ldmatrix and mma.sync are emulated from PTX's fragment layouts (m8n8 b16 matrices; m16n8k16 A, B and C
fragments), written here independently of the kernel; the kernel's own index arithmetic is copied
expression for expression (kept in step with the .cuh by hand, as engine/prefill.py's dequant twin is).
A wrong lane address, fragment or mask shows as a wrong output here, before any GPU runs it."""

import numpy as np
import pytest

BK = 64
LOG2E = 1.4426950408889634


def ldmatrix_x4(smem, addr, trans=False):
    """regs[lane][i] = the two halves lane holds of matrix i, whose row r lane 8i + r addresses."""
    regs = [[None] * 4 for _ in range(32)]
    for i in range(4):
        mat = np.stack([smem[addr[8 * i + r][0], addr[8 * i + r][1]:addr[8 * i + r][1] + 8] for r in range(8)])
        for lane in range(32):
            g, t = lane // 4, lane % 4
            regs[lane][i] = (mat[2 * t, g], mat[2 * t + 1, g]) if trans else (mat[g, 2 * t], mat[g, 2 * t + 1])
    return regs


def mma_16816(c, a, b0, b1):
    """c[lane] (4 floats, 16 x 8 f32) += a (16 x 16) . b (16 x 8), fragments as PTX lays them out."""
    A, B = np.zeros((16, 16), np.float32), np.zeros((16, 8), np.float32)
    for lane in range(32):
        g, t = lane // 4, lane % 4
        A[g, 2 * t:2 * t + 2], A[g + 8, 2 * t:2 * t + 2] = a[lane][0], a[lane][1]
        A[g, 2 * t + 8:2 * t + 10], A[g + 8, 2 * t + 8:2 * t + 10] = a[lane][2], a[lane][3]
        B[2 * t:2 * t + 2, g], B[2 * t + 8:2 * t + 10, g] = b0[lane], b1[lane]
    D = A @ B
    for lane in range(32):
        g, t = lane // 4, lane % 4
        c[lane] += np.array([D[g, 2 * t], D[g, 2 * t + 1], D[g + 8, 2 * t], D[g + 8, 2 * t + 1]], np.float32)


def twin(HS, BQ, qkv, k_cache, v_cache, cs, pos0, n_q, n_heads, kv_dim, kv_mul):
    LD, WARPS, NS, NO = HS + 8, BQ // 16, BK // 8, HS // 8
    out = np.full((n_q, n_heads * HS), np.nan, np.float16)
    gx, gy = -(-n_q // BQ), n_heads
    for by in range(gy):
        for bx in range(gx):
            lin = by * gx + bx
            h, q0 = lin % gy, (gx - 1 - lin // gy) * BQ
            kvh = h // kv_mul
            n_keys = pos0 + min(q0 + BQ, n_q)
            qs = np.zeros((BQ, LD), np.float16)
            for r in range(min(BQ, n_q - q0)):
                q = qkv[q0 + r, h * HS:(h + 1) * HS].astype(np.float32)
                c, s = cs[pos0 + q0 + r, :, 0], cs[pos0 + q0 + r, :, 1]
                qs[r, 0:HS:2], qs[r, 1:HS:2] = q[0::2] * c - q[1::2] * s, q[0::2] * s + q[1::2] * c
            o = np.zeros((WARPS, 32, NO, 4), np.float32)
            m, l = np.full((WARPS, 32, 2), -np.inf, np.float32), np.zeros((WARPS, 32, 2), np.float32)
            for tile in range(-(-n_keys // BK)):
                k0 = tile * BK
                kt, vt = np.zeros((BK, LD), np.float16), np.zeros((BK, LD), np.float16)
                n = min(BK, n_keys - k0)                 # rows past n_keys: zero (cp.async src-size 0)
                kt[:n, :HS] = k_cache[k0:k0 + n, kvh * HS:(kvh + 1) * HS]
                vt[:n, :HS] = v_cache[k0:k0 + n, kvh * HS:(kvh + 1) * HS]
                for w in range(WARPS):
                    row0 = q0 + w * 16
                    first = pos0 + row0
                    if not (row0 < n_q and k0 <= first + 15):
                        continue
                    S = np.zeros((32, NS, 4), np.float32)
                    for kk in range(HS // 16):
                        a = ldmatrix_x4(qs, [(w * 16 + ln % 16, (ln // 16) * 8 + kk * 16) for ln in range(32)])
                        for j in range(NS // 2):
                            b = ldmatrix_x4(kt, [(j * 16 + ln % 8 + (ln // 16) * 8, ((ln // 8) % 2) * 8 + kk * 16)
                                                 for ln in range(32)])
                            for sub in range(2):
                                c = S[:, 2 * j + sub]
                                mma_16816(c, a, [r[2 * sub] for r in b], [r[2 * sub + 1] for r in b])
                    for ln in range(32):
                        g, t = ln // 4, ln % 4
                        if k0 + BK - 1 > first:
                            for j in range(NS):
                                for e in range(4):
                                    if k0 + j * 8 + 2 * t + (e & 1) > first + g + (0 if e < 2 else 8):
                                        S[ln, j, e] = -np.inf
                    sl = np.float32(LOG2E / np.sqrt(HS))
                    mx = np.stack([S[:, :, 0:2].max((1, 2)), S[:, :, 2:4].max((1, 2))], 1)      # (32, 2)
                    mx = mx.reshape(8, 4, 2).max(1).repeat(4, 0)                                # the quad's
                    mn = np.maximum(m[w], mx * sl)
                    corr = np.exp2(m[w] - mn)
                    m[w], l[w] = mn, l[w] * corr
                    o[w] *= np.repeat(corr, 2, 1)[:, None, :]
                    S = np.exp2(S * sl - np.repeat(mn, 2, 1)[:, None, :])
                    l[w] += np.stack([S[:, :, 0:2].sum((1, 2)), S[:, :, 2:4].sum((1, 2))], 1)
                    P = S.astype(np.float16)
                    for kk in range(BK // 16):
                        a = [((P[ln, 2 * kk, 0], P[ln, 2 * kk, 1]), (P[ln, 2 * kk, 2], P[ln, 2 * kk, 3]),
                              (P[ln, 2 * kk + 1, 0], P[ln, 2 * kk + 1, 1]), (P[ln, 2 * kk + 1, 2], P[ln, 2 * kk + 1, 3]))
                             for ln in range(32)]
                        for d in range(HS // 16):
                            b = ldmatrix_x4(vt, [(kk * 16 + ln % 8 + ((ln // 8) % 2) * 8, (ln // 16) * 8 + d * 16)
                                                 for ln in range(32)], trans=True)
                            for sub in range(2):
                                mma_16816(o[w, :, 2 * d + sub], a, [r[2 * sub] for r in b], [r[2 * sub + 1] for r in b])
            for w in range(WARPS):
                row0 = q0 + w * 16
                if row0 >= n_q:
                    continue
                lsum = l[w].reshape(8, 4, 2).sum(1)                                          # (row g, half)
                for ln in range(32):
                    g, t = ln // 4, ln % 4
                    for d in range(NO):
                        for e in range(4):
                            r = row0 + g + (8 if e >= 2 else 0)
                            if r < n_q:
                                out[r, h * HS + d * 8 + 2 * t + (e & 1)] = o[w, ln, d, e] / lsum[g, e // 2]
    return out


def attention_f64(qkv, k_cache, v_cache, cs, pos0, n_heads, n_kv, hs):
    T = qkv.shape[0]
    n = pos0 + T
    q = qkv[:, :n_heads * hs].astype(np.float64).reshape(T, n_heads, hs)
    c, s = cs[pos0:n, None, :, 0].astype(np.float64), cs[pos0:n, None, :, 1].astype(np.float64)
    qr = np.empty_like(q)
    qr[..., 0::2], qr[..., 1::2] = q[..., 0::2] * c - q[..., 1::2] * s, q[..., 0::2] * s + q[..., 1::2] * c
    K = np.repeat(k_cache[:n].astype(np.float64).reshape(n, n_kv, hs), n_heads // n_kv, axis=1)
    V = np.repeat(v_cache[:n].astype(np.float64).reshape(n, n_kv, hs), n_heads // n_kv, axis=1)
    sc = np.einsum("thd,shd->hts", qr, K) / np.sqrt(hs)
    sc[:, np.arange(n)[None, :] > pos0 + np.arange(T)[:, None]] = -np.inf
    p = np.exp(sc - sc.max(-1, keepdims=True))
    return np.einsum("hts,shd->thd", p / p.sum(-1, keepdims=True), V).reshape(T, n_heads * hs)


@pytest.mark.parametrize("hs, bq, n_heads, n_kv, T, pos0", [
    (32, 64, 4, 1, 77, 5),          # GQA 4, a context in the cache, ragged query and key tiles, an idle warp
    (16, 128, 2, 2, 20, 70),        # a short prompt after a long context: every key tile masked for no one
    (48, 64, 2, 1, 1, 0),           # one token: one key, three idle warps
    (32, 128, 2, 2, 130, 0),        # two query tiles of 128, three key tiles
])
def test_twin_matches_float64(hs, bq, n_heads, n_kv, T, pos0):
    rng = np.random.default_rng(T)
    seq, kv_dim = 256, n_kv * hs
    qkv = rng.standard_normal((T, n_heads * hs + 2 * kv_dim)).astype(np.float16)
    kc = np.full((seq, kv_dim), np.nan, np.float16)
    vc = kc.copy()
    kc[:pos0 + T], vc[:pos0 + T] = rng.standard_normal((2, pos0 + T, kv_dim))
    ang = np.arange(seq)[:, None] * 10000.0 ** (-np.arange(0, hs, 2) / hs)[None, :]
    cs = np.stack([np.cos(ang), np.sin(ang)], -1).astype(np.float32)
    with np.errstate(invalid="raise"):          # exp2(-inf - -inf) would be NaN: the first tile keeps m finite
        got = twin(hs, bq, qkv, kc, vc, cs, pos0, T, n_heads, kv_dim, n_heads // n_kv)
    want = attention_f64(qkv, kc, vc, cs, pos0, n_heads, n_kv, hs)
    assert np.isfinite(got).all()
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=0, atol=5e-3)
