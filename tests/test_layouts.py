"""autosched.layouts: nibble orders read the way the kernel's LOP3 reads them, the tiled word order
of the kernel's word_index/scale_index, apply(), and the errors for shapes that cannot be laid out.
"""

import numpy as np
import pytest

from autosched.layouts import apply, interleave_k, interleave_rows, tile

F = np.uint32(0xF)


def nib(words: np.ndarray, pos: int) -> np.ndarray:
    """Nibble at position pos (bits 4*pos .. 4*pos+3)."""
    return (words >> np.uint32(4 * pos)) & F


def random_words(shape, seed=0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 2**32, size=shape, dtype=np.uint32)


def word_index(row, w, KW, LN, LK):
    """gemv_q4f16.cuh Gemv::word_index, in numpy."""
    return ((row // LN) * (KW // LK) + w // LK) * (LN * LK) + (row % LN) * LK + (w % LK)


def scale_index(row, g, G, LN):
    """gemv_q4f16.cuh Gemv::scale_index, in numpy."""
    return ((row // LN) * G + g) * LN + (row % LN)


# -- nibble orders ------------------------------------------------------------------------------

@pytest.mark.parametrize("seed", range(3))
def test_interleave_k_pairs_as_lop3_reads_them(seed):
    w = random_words((7, 11), seed)
    out = interleave_k(w)
    assert out.shape == w.shape and out.dtype == np.uint32
    for p in range(4):
        # nibble_pair(word >> 4p): low half2 lane <- bits 4p, high lane <- bits 16 + 4p
        assert np.array_equal(nib(out, p), nib(w, 2 * p))
        assert np.array_equal(nib(out, 4 + p), nib(w, 2 * p + 1))


def test_interleave_k_golden():
    assert interleave_k(np.array([0x76543210], dtype=np.uint32))[0] == 0x75316420


@pytest.mark.parametrize("seed", range(3))
def test_interleave_rows_pairs_rows_as_lop3_reads_them(seed):
    w = random_words((10, 6), seed)
    out = interleave_rows(w)
    assert out.shape == w.shape and out.dtype == np.uint32
    for m in range(w.shape[0] // 2):
        a, b = w[2 * m], w[2 * m + 1]
        for e in range(8):
            word = out[2 * m] if e < 4 else out[2 * m + 1]
            p = e % 4
            assert np.array_equal(nib(word, p), nib(a, e)), (m, e)
            assert np.array_equal(nib(word, 4 + p), nib(b, e)), (m, e)


def test_interleave_rows_golden():
    w = np.array([[0x76543210], [0xFEDCBA98]], dtype=np.uint32)
    assert interleave_rows(w)[:, 0].tolist() == [0xBA983210, 0xFEDC7654]


def test_interleave_rows_refuses_odd_rows():
    with pytest.raises(ValueError, match="even"):
        interleave_rows(random_words((3, 4)))


def test_interleaves_are_permutations_of_nibbles():
    w = random_words((6, 5), 4)
    for out in (interleave_k(w), interleave_rows(w)):
        assert sorted(np.concatenate([nib(out, p).ravel() for p in range(8)]).tolist()) == \
            sorted(np.concatenate([nib(w, p).ravel() for p in range(8)]).tolist())


# -- tiling --------------------------------------------------------------------------------------

def random_tiling_cases(count=25, seed=0):
    rng = np.random.default_rng(seed)
    cases = []
    for _ in range(count):
        n, k = (int(x) for x in rng.choice([1, 2, 3, 4, 8, 16], size=2))
        r, c = n * int(rng.integers(1, 6)), k * int(rng.integers(1, 6))
        cases.append((r, c, n, k))
    return cases


@pytest.mark.parametrize("r, c, n, k", random_tiling_cases())
def test_tile_matches_kernel_word_index(r, c, n, k):
    a = random_words((r, c), r * 100 + c)
    out = tile(a, n, k)
    assert out.shape == (r * c,) and out.flags["C_CONTIGUOUS"]
    rows, cols = np.indices((r, c))
    idx = word_index(rows, cols, c, n, k)
    assert np.array_equal(np.sort(idx.ravel()), np.arange(r * c))   # a bijection
    assert np.array_equal(out[idx], a)


@pytest.mark.parametrize("r, c, n, k", random_tiling_cases(seed=1))
def test_q4_scales_match_kernel_scale_index(r, c, n, k):
    s = np.random.default_rng(r + c).standard_normal((r, c)).astype(np.float16)
    out = apply("q4_scales", {"n": n}, s)
    rows, cols = np.indices((r, c))
    assert out.dtype == np.float16
    assert np.array_equal(out[scale_index(rows, cols, c, n)], s)


@pytest.mark.parametrize("shape, n, k", [((6, 8), 4, 2), ((8, 8), 2, 3), ((5, 4), 2, 1)])
def test_tile_refuses_non_dividing_tiles(shape, n, k):
    with pytest.raises(ValueError, match="does not divide"):
        tile(random_words(shape), n, k)


# -- apply -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("nibbles, interleave", [
    ("natural", lambda a: a), ("k", interleave_k), ("rows", interleave_rows)])
def test_apply_q4_words_is_interleave_then_tile(nibbles, interleave):
    a = random_words((8, 12), 5)
    out = apply("q4_words", {"nibbles": nibbles, "n": 4, "k": 3}, a)
    assert np.array_equal(out, tile(interleave(a), 4, 3))


def test_apply_identity():
    a = random_words((4, 4))
    assert np.array_equal(apply("identity", {}, a), a)


@pytest.mark.parametrize("compute", ["natural", "k", "rows"])
def test_kernel_reads_recover_natural_values(compute):
    """Read the laid-out words back exactly as the kernel's three compute paths do."""
    N, KW, LN, LK = 8, 12, 4, 3
    a = random_words((N, KW), 9)
    q = np.stack([nib(a, e) for e in range(8)], axis=-1)      # q[row, word, e] natural
    laid = apply("q4_words", {"nibbles": compute, "n": LN, "k": LK}, a)
    rows, ws = np.indices((N, KW))
    word = laid[word_index(rows, ws, KW, LN, LK)]
    if compute == "natural":                # fp32 path: (w >> 4e) & 0xF
        for e in range(8):
            assert np.array_equal(nib(word, e), q[..., e])
    elif compute == "k":                    # half2 over K: pair p = (e 2p, e 2p+1) of one row
        for p in range(4):
            assert np.array_equal(nib(word, p), q[..., 2 * p])
            assert np.array_equal(nib(word, 4 + p), q[..., 2 * p + 1])
    else:                                   # half2 over N: pair = (row i, row i+1) at one e
        for i in range(0, N, 2):
            for e in range(8):
                x = word[i] if e < 4 else word[i + 1]
                assert np.array_equal(nib(x, e & 3), q[i, :, e])
                assert np.array_equal(nib(x, 4 + (e & 3)), q[i + 1, :, e])


def test_apply_refuses_unknown_names():
    a = random_words((4, 4))
    with pytest.raises(ValueError, match="unknown layout"):
        apply("zigzag", {}, a)
    with pytest.raises(ValueError, match="unknown nibble order"):
        apply("q4_words", {"nibbles": "zigzag", "n": 1, "k": 1}, a)


# -- torch words (the engine packs a model's weights on the GPU through the same transforms) -------

@pytest.mark.parametrize("nibbles", ["k", "rows"])
def test_torch_int32_words_pack_to_the_same_bits_as_numpy(nibbles):
    torch = pytest.importorskip("torch")
    w = random_words((12, 10), 7)
    w[0, 0], w[1, 0] = 0xFFFFFFFF, 0x80000001        # sign bits set: torch shifts them in on >>
    want = apply("q4_words", {"nibbles": nibbles, "n": 2, "k": 5}, w)
    got = apply("q4_words", {"nibbles": nibbles, "n": 2, "k": 5}, torch.from_numpy(w.view(np.int32)))
    assert got.dtype == torch.int32 and np.array_equal(got.numpy().view(np.uint32), want)


def test_numpy_words_under_sign_bits_keep_every_nibble():
    w = np.full((2, 3), 0xF7654321, dtype=np.uint32)
    assert interleave_k(w)[0, 0] == 0xF6427531 and interleave_rows(w)[:, 0].tolist() == [0x43214321, 0xF765F765]
