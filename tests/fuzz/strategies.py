"""Hypothesis strategies shared by the fuzz tests: shape-like text, valid workloads of each family,
and arbitrary values and dicts of the kind a JSON --config or a Python caller may hand over."""

import os

from hypothesis import strategies as st

from autosched.registry import FAMILIES
from autosched.workloads import GemvDense, GemvQ4F16, Hgemm, Sgemm
from autosched.workloads.hgemm import DTYPES, LAYOUTS
from autosched.workloads.sgemm import MAX_M

WORDS = 2**31 - 1


def examples(n: int) -> int:
    """`n` examples a property, or $FUZZ_EXAMPLES of them for a deeper run than CI's (~20 s in all)."""
    return int(os.environ.get("FUZZ_EXAMPLES", n))

# text near the shape syntax reaches the parsers' deeper branches far more often than st.text()
shape_like = st.one_of(
    st.text(max_size=40),
    st.from_regex(r"\A[0-9xX* _btaTnfp16\-+.\u00b2\u0661]{0,24}\Z"),
    st.lists(st.one_of(st.integers(-5, 2**40).map(str), st.sampled_from(["", " ", "0", "9" * 40, "\u00b2", "1e3"])),
             min_size=0, max_size=4).map("x".join).flatmap(
        lambda s: st.sampled_from([s, s + "_bt", s + "_ta", s.upper(), " " + s + " ", s.replace("x", "*")])),
    # hgemm's layout and dtype suffixes, in any order and number
    st.tuples(st.lists(st.integers(1, 5000).map(str), min_size=3, max_size=3).map("x".join),
              st.lists(st.sampled_from(["nn", "nt", "bt", "tn", "tt", "bb", "fp16", "bf16", "", "ta", "b"]),
                       max_size=3)).map(lambda p: "_".join([p[0], *p[1]])),
)


@st.composite
def gemv_workloads(draw, max_n=2**29 - 1):
    k = 32 * draw(st.integers(1, (2**31 - 32) // 32))
    n = draw(st.integers(1, max(1, min(max_n, WORDS // (k // 8)))))
    return GemvQ4F16(n, k)


@st.composite
def gemv_dense_workloads(draw):
    k = 8 * draw(st.integers(1, WORDS // 8))
    return GemvDense(draw(st.integers(1, max(1, WORDS // k))), k)


@st.composite
def gemm_workloads(draw, cls):
    """M, N, K with every matrix under 2^31 elements and M within the grid, in the family's
    multiples (hgemm: K, and N where B is row-major, multiples of 8)."""
    flag = draw(st.integers(0, 1))
    step = 8 if cls is Hgemm else 1
    m = draw(st.integers(1, MAX_M))
    k = step * draw(st.integers(1, (2**31 - 1) // m // step or 1))
    n_step = step if (cls is Hgemm and not flag) else 1
    n_max = min((2**31 - 1) // m, (2**31 - 1) // k) // n_step
    if n_max < 1 or m * k >= 2**31:
        m, k, n_max = 64, 8 * step, 64
    n = n_step * draw(st.integers(1, n_max))
    return cls(m, n, k, flag)


@st.composite
def hgemm_workloads(draw):
    """gemm_workloads(Hgemm) in every layout and dtype: a stored row (A's K or M, B's N or K) a
    multiple of 8, and all three multiples of 16 in the blocked layout."""
    layout, bf16 = draw(st.sampled_from(LAYOUTS)), draw(st.integers(0, 1))
    if layout in ("nn", "nt"):      # gemm_workloads draws b_col, so nn or nt, itself
        w = draw(gemm_workloads(Hgemm))
        return Hgemm(w.M, w.N, w.K, b_col=w.b_col, bf16=bf16)
    step = {"M": 16 if layout == "bb" else 8 if layout[0] == "t" else 1,
            "N": 16 if layout == "bb" else 1 if layout[1] == "t" else 8,
            "K": 16 if layout == "bb" else 8 if layout[1] == "t" else 1}
    dims = {}
    for d in "MKN":         # each under the 2^31 element and grid limits given those drawn before
        room = min([MAX_M if d == "M" else 2**31 - 1] + [(2**31 - 1) // v for v in dims.values()])
        dims[d] = step[d] * draw(st.integers(1, max(1, room // step[d])))
    return Hgemm.from_shape(f"{dims['M']}x{dims['N']}x{dims['K']}", layout=layout, dtype=DTYPES[bf16])


VALID_WORKLOADS = {
    "gemv-q4f16": gemv_workloads(),
    "gemv-dense": gemv_dense_workloads(),
    "sgemm": gemm_workloads(Sgemm),
    "hgemm": hgemm_workloads(),
}
assert set(VALID_WORKLOADS) == set(FAMILIES), "a family without a fuzz strategy: add it above"

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 300), st.integers(), st.floats(allow_nan=True),
    st.text(max_size=8), st.sampled_from(["k", "n", "r", "s", "1", "128"]), st.binary(max_size=4),
)
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                      st.dictionaries(st.text(max_size=4), inner, max_size=3),
                                                      st.frozensets(scalars.filter(lambda v: v == v), max_size=2)),
                      max_leaves=6)
keys = st.one_of(st.text(max_size=10), st.integers(), st.none(), st.tuples(st.integers()), st.booleans())
