"""What the GPU worker measures with, on the CPU: row families (measure/row_family.py), where the GEMMs
of one N, K, layout and dtype share B and the first M rows of A, their reference and their bound,
grown only for rows no earlier M needed; the worker keeps the families used last and forgets them on
request; and GpuRunner.measure_stream's items fed from a generator that may fail."""

import numpy as np
import pytest

from autosched.measure.gpu import GpuRunner
from autosched.measure.reference_gpu import host_products
from autosched.measure.row_family import BLOCK, COL_BLOCK, RowFamily
from autosched.measure.worker import Worker
from autosched.workloads import Hgemm, Sgemm


@pytest.mark.parametrize("layout, dtype", [("nn", "fp16"), ("nt", "fp16"), ("nt", "bf16"), ("nn", "bf16")])
def test_a_member_is_the_first_rows_and_its_reference_and_bound_are_the_workload_s_own(layout, dtype):
    fam = RowFamily(Hgemm.from_shape("200x72x40", layout=layout, dtype=dtype), seed=5)
    for M, N in ((1, 72), (37, 8), (130, 264), (200, 72), (3, 520)):
        w = Hgemm.from_shape(f"{M}x{N}x40", layout=layout, dtype=dtype)
        inputs, ref, bound = fam.view(w)
        assert inputs["A"].shape == (M, 40) and inputs["A"].flags.c_contiguous
        assert inputs["B"].shape == ((N, 40) if layout == "nt" else (40, N))
        # the workload's own float64 reference and bound of exactly these inputs
        np.testing.assert_allclose(ref, w.reference(inputs), rtol=1e-13, atol=1e-13)
        # the bound's sum |a||b| is summed in float32 (a tolerance's size, not the reference)
        np.testing.assert_allclose(bound, w.error_bound(inputs), rtol=1e-5, atol=1e-30)
        assert ref.shape == w.output_spec()[0]


@pytest.mark.parametrize("layout", ["nn", "nt"])
def test_a_member_s_prefix_inputs_and_corner_lie_in_the_device_arrays(layout):
    """What the worker's device mirror holds: A (and B where stored (N, K)) of a member are the first
    rows of the family's stored arrays, byte for byte, and its reference and bound the top-left
    corner of the family's, whose row stride is the family's columns."""
    fam = RowFamily(Hgemm.from_shape("200x72x40", layout=layout), seed=9)
    for M, N in ((37, 8), (130, 264), (3, 520)):
        w = Hgemm.from_shape(f"{M}x{N}x40", layout=layout)
        inputs, ref, bound = fam.view(w)
        arrays = fam.device_arrays()
        assert all(a.flags.c_contiguous for a in arrays.values())
        prefixes = fam.prefix_inputs(w)
        assert sorted(prefixes) == (["A", "B"] if layout == "nt" else ["A"])
        for name, arr in prefixes.items():
            host = inputs[name]
            assert np.shares_memory(host, arrays[arr]) or np.array_equal(host, arrays[arr][:len(host)])
            assert arrays[arr][:len(host)].tobytes() == np.ascontiguousarray(host).tobytes()
        assert arrays["ref"].shape == (fam.rows, fam.cols)
        np.testing.assert_array_equal(arrays["ref"][:M, :N], ref)
        np.testing.assert_array_equal(arrays["bound"][:M, :N], bound)


def test_growing_computes_only_new_rows_at_least_doubling_and_new_columns():
    fam = RowFamily(Hgemm.from_shape("8x64x32_bt"), seed=1)
    assert fam.rows == fam.cols == 0 and fam.products == 0
    fam.view(Hgemm.from_shape("100x64x32_bt"))
    assert (fam.rows, fam.cols) == (2 * BLOCK, COL_BLOCK) and fam.products == 2 * BLOCK * COL_BLOCK
    fam.view(Hgemm.from_shape("50x64x32_bt"))            # already drawn: nothing computed
    fam.view(Hgemm.from_shape("100x256x32_bt"))
    assert fam.products == 2 * BLOCK * COL_BLOCK
    fam.view(Hgemm.from_shape("129x64x32_bt"))           # doubles: 256 rows, 128 of them new
    assert fam.rows == 4 * BLOCK and fam.products == 4 * BLOCK * COL_BLOCK
    fam.view(Hgemm.from_shape("1000x64x32_bt"))          # past double: to the M asked, in whole blocks
    assert fam.rows == 1024 and fam.products == 1024 * COL_BLOCK
    fam.view(Hgemm.from_shape("10x264x32_bt"))           # columns: to the N asked, in whole blocks
    assert fam.cols == 2 * COL_BLOCK and fam.products == 1024 * 2 * COL_BLOCK


def test_rows_and_columns_do_not_depend_on_the_order_shapes_arrive_in():
    grown, direct = RowFamily(Hgemm.from_shape("1x48x24_bt"), 9), RowFamily(Hgemm.from_shape("1x48x24_bt"), 9)
    for M, N in ((3, 48), (70, 600), (300, 8)):
        grown.view(Hgemm.from_shape(f"{M}x{N}x24_bt"))
    a, ref, bound = direct.view(Hgemm.from_shape("300x600x24_bt"))
    a2, ref2, bound2 = grown.view(Hgemm.from_shape("300x600x24_bt"))
    assert np.array_equal(a["A"], a2["A"]) and np.array_equal(a["B"], a2["B"])
    np.testing.assert_allclose(ref, ref2, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(bound, bound2, rtol=1e-5, atol=1e-30)
    other = RowFamily(Hgemm.from_shape("1x48x24_bt"), 10).view(Hgemm.from_shape("300x600x24_bt"))[0]
    assert not np.array_equal(other["A"], a["A"])        # another seed, other inputs


def test_family_keys_leave_m_and_n_out_and_nothing_else():
    key = Hgemm.from_shape("100x4096x4096_bt").row_family_key()
    assert key == Hgemm.from_shape("7x4104x4096_bt").row_family_key() and "M=" not in key and "N=" not in key
    others = ["100x4096x4096", "100x4096x4096_bt_bf16", "100x4096x4104_bt"]
    assert len({Hgemm.from_shape(s).row_family_key() for s in others} | {key}) == 4
    # A stored (K, M) or blocked: a row of the output is not a row of the storage
    assert Hgemm.from_shape("104x4096x4096", layout="tn").row_family_key() is None
    assert Hgemm.from_shape("64x64x64", layout="bb").row_family_key() is None
    with pytest.raises(ValueError, match="no row family"):
        RowFamily(Hgemm.from_shape("64x64x64", layout="tn"), 1)
    fam = RowFamily(Hgemm.from_shape("8x64x32_bt"), 1)
    with pytest.raises(ValueError, match="not of the row family"):
        fam.view(Hgemm.from_shape("8x64x48_bt"))


def test_the_worker_keeps_the_families_used_last_and_forgets_them(monkeypatch):
    import autosched.measure.worker as worker
    monkeypatch.setattr(worker, "MAX_FAMILIES", 2)
    w = object.__new__(Worker)          # the family bookkeeping only: no GPU, no buffers
    w.states, w.families, w.products, w.mirror = {}, {}, host_products, None
    f1 = w._family_of(Hgemm.from_shape("10x64x32_bt"))
    assert f1 is not None and w._family_of(Hgemm.from_shape("300x64x32_bt")) is f1
    f2 = w._family_of(Hgemm.from_shape("10x64x48_bt"))
    assert f2 is not f1 and w._family_of(Hgemm.from_shape("8x64x32_bt")) is f1     # both kept
    assert w._family_of(Hgemm.from_shape("10x128x32_bt")) is f1                      # another N: f1 too
    f3 = w._family_of(Hgemm.from_shape("10x64x40_bt"))                               # f2 used least lately
    assert list(w.families.values()) == [f1, f3]
    assert w._family_of(Sgemm(64, 64, 64)) is None and list(w.families.values()) == [f1, f3]
    w.forget()
    assert w.families == {} and w.states == {}
    # and no more host memory than FAMILY_BYTES: the one in use stays whatever its size
    monkeypatch.setattr(worker, "MAX_FAMILIES", 6)
    small = w._family_of(Hgemm.from_shape("64x64x32_bt"))
    w.families[small.key].view(Hgemm.from_shape("64x64x32_bt"))
    monkeypatch.setattr(worker, "FAMILY_BYTES", small.nbytes + 1)
    big = w._family_of(Hgemm.from_shape("8x512x512_bt"))       # drawn on its first view: sized by what it will hold
    assert list(w.families.values()) == [big] and big.bytes_after(Hgemm.from_shape("8x512x512_bt")) > small.nbytes
    big.view(Hgemm.from_shape("8x512x512_bt"))
    assert big.nbytes == big.bytes_after(Hgemm.from_shape("8x512x512_bt"))
    assert big._products is host_products           # the worker's products reach its families


def test_a_family_grows_through_the_products_it_is_given():
    """The worker hands its GPU's products to the families; a family asks only for its new rows'."""
    calls = []

    def products(a32, b32):
        calls.append((a32.shape, b32.shape))
        return host_products(a32, b32)
    w = Hgemm.from_shape("100x40x24_bt")
    fam, plain = RowFamily(w, 3, products), RowFamily(w, 3)
    got, want = fam.view(w), plain.view(w)
    fam.view(Hgemm.from_shape("300x40x24_bt"))
    fam.view(Hgemm.from_shape("8x264x24_bt"))
    # 128 rows of 256 columns, then rows 128..320, then columns 256..512 of all 320 rows
    assert calls == [((128, 24), (256, 24)), ((192, 24), (256, 24)), ((320, 24), (256, 24))]
    assert all(np.array_equal(x, y) for x, y in zip(got[1:], want[1:]))


def test_forget_inputs_reaches_every_worker():
    class Slot:
        def __init__(self):
            self.forgot = []

        def forget(self, timeout):
            self.forgot.append(timeout)

    r = object.__new__(GpuRunner)
    r.slots, r.prepare_timeout_s = [Slot(), Slot()], 12.0
    r.forget_inputs()
    assert [s.forgot for s in r.slots] == [[12.0], [12.0]]


def test_an_items_generator_that_raises_is_raised_not_hung():
    """GpuRunner.measure_stream feeds items from a thread: a generator that fails there (a build that
    raised) must end the stream with its error, not leave the GPU threads waiting."""
    from types import SimpleNamespace

    from autosched.measure.result import Measurement, Status

    class Slot:
        def measure(self, spec, binary, *a):
            return Measurement(Status.OK, 1.0, 1.0, 0.0, 0.0)

    r = object.__new__(GpuRunner)
    r.slots, r._best_us, r.screen, r.build_wait_s = [Slot(), Slot()], {}, None, 0.0
    r.timeout_s = r.prepare_timeout_s = 1.0
    spec = SimpleNamespace(workload_key="k")

    def items():
        yield 0, spec, SimpleNamespace(ok=True)
        raise RuntimeError("the build pool died")

    got = []
    with pytest.raises(RuntimeError, match="pool died"):
        for tag, m in r.measure_stream(items()):
            got.append(tag)
    assert got == [0]
