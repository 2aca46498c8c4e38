"""Property tests of shape parsing (issue 14): any text is a workload or a WorkloadError naming the
syntax, valid shapes round-trip through shape_str and the key, and family() takes any name."""

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from autosched.registry import FAMILIES, family
from autosched.workloads import Workload, WorkloadError, workload_from_key
from fuzz.strategies import examples, VALID_WORKLOADS, shape_like

BOUNDED = settings(max_examples=examples(100), deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.parametrize("name", list(FAMILIES))
@BOUNDED
@given(text=shape_like)
@example(text="--")
@example(text="\u00b2x32")
@example(text="9" * 5000 + "x32")
@example(text="25000000000x4096")
def test_any_text_is_a_workload_or_a_workload_error(name, text):
    fam = FAMILIES[name]
    try:
        w = fam.workload.from_shape(text)
    except WorkloadError as e:
        msg = str(e)
        assert msg and msg.count("\n") <= 1, msg
        return
    assert isinstance(w, fam.workload)
    assert fam.parse(text) == w
    # what was accepted reads back as itself
    assert fam.workload.from_shape(w.shape_str) == w


@pytest.mark.parametrize("name", list(FAMILIES))
@BOUNDED
@given(data=st.data())
def test_valid_shapes_round_trip(name, data):
    fam = FAMILIES[name]
    w = data.draw(VALID_WORKLOADS[name])
    assert fam.parse(w.shape_str) == w
    assert fam.parse(w.shape_str.upper()) == w
    assert fam.parse(" " + w.shape_str.replace("x", " * ") + " ") == w
    assert workload_from_key(w.key) == w
    assert type(workload_from_key(w.key)) is fam.workload


@BOUNDED
@given(key=st.one_of(st.text(max_size=40),
                     st.sampled_from(["gemv_q4f16", "sgemm", "hgemm"]).flatmap(
                         lambda n: st.text(max_size=30).map(lambda rest: f"{n}:{rest}")),
                     st.sampled_from(["gemv_q4f16:N=", "sgemm:M=1,N=1,K=", "hgemm:M=8,N=8,K=8,b_col=",
                                      "hgemm:M=16,N=16,K=16,b_col=0,a_col=", "hgemm:M=16,N=16,K=16,b_col=0,blocked=",
                                      "hgemm:M=16,N=16,K=16,b_col=1,bf16="]).flatmap(
                         lambda head: st.text(max_size=12).map(lambda tail: head + tail))))
@example(key="gemv_q4f16:=0\x1f")
def test_any_workload_key_is_a_workload_or_a_workload_error(key):
    try:
        w = workload_from_key(key)
    except WorkloadError:
        return
    assert isinstance(w, Workload) and workload_from_key(w.key) == w


@settings(max_examples=examples(100), deadline=None)
@given(name=st.one_of(st.text(max_size=20), st.sampled_from([*FAMILIES, *(f.workload.name for f in FAMILIES.values())])))
def test_family_of_any_name_is_a_family_or_a_value_error(name):
    try:
        f = family(name)
    except ValueError as e:
        assert repr(name) in str(e) and all(n in str(e) for n in FAMILIES)
        return
    assert name in (f.name, f.workload.name)


@BOUNDED
@given(w=VALID_WORKLOADS["hgemm"])
def test_hgemm_options_and_suffixes_name_the_same_workload(w):
    fam = FAMILIES["hgemm"]
    dims = f"{w.M}x{w.N}x{w.K}"
    assert fam.parse(dims, layout=w.layout, dtype=w.dtype) == w
    assert fam.parse(w.shape_str, layout=w.layout.upper(), dtype=w.dtype) == w
    assert fam.parse(f"{dims}_{w.dtype}_{w.layout}") == w
    assert workload_from_key(w.key).params == w.params
    # the flags a key leaves out are the defaults: an FP16 nn/nt key is what it was before them
    assert ("a_col" in w.key, "blocked" in w.key, "bf16" in w.key) == (bool(w.a_col), bool(w.blocked), bool(w.bf16))
    served = fam.templates_for(w)
    # hgemm_mma: FP16 nn/nt; hgemm_wgmma: every row layout, FP16 and BF16, with N % 8 == 0 (its
    # TMA store's row stride); nothing serves the blocked layout yet
    assert bool(served) == ((w.layout in ("nn", "nt") and w.dtype == "fp16")
                            or (w.layout != "bb" and w.N % 8 == 0))
    for t in fam.templates:
        assert (t.refuses(w) is None) == (t in served)
