"""On an sm_90 GPU: hgemm_wgmma_sched micro-kernels served for a dynamic M by ops.HgemmDispatch (wgmma
backend), against float64, on ragged Ms called in a row through one dispatcher: A's box rows and the A
and C maps encoded per M, both schedules, both stagings, a 168-column tile (its unswizzled C boxes),
FP16 and BF16.  What has to pass before knobs.DYN_SCHED flips; it keeps the switch on for the module
whatever the environment."""

import pytest

from gemm_checks import assert_serves_in_turn, handmade_dispatcher, scaled_weight

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")

SCH, WG = "hgemm_wgmma_sched", "hgemm_wgmma"
S = {"swizzle": 128, "group": 8}
SCHEDS = [{**S, "bm": 64, "bn": 128, "stages": 6, "schedule": "pingpong", "epi_boxes": 0},
          {**S, "bm": 128, "bn": 168, "stages": 4, "schedule": "cooperative", "epi_boxes": 2},
          {**S, "bm": 128, "bn": 256, "stages": 4, "schedule": "cooperative", "epi_boxes": 2}]
SMALL = {"bm": 64, "bn": 64, "consumers": 1, "swizzle": 128, "stages": 8, "group": 4}
TOPS = [16, 100, 700]
SEQUENCE = [300, 1, 17, 100, 101, 129, 700, 701, 2048, 1500, 65, 300]


@pytest.fixture(scope="module", autouse=True)
def switch():
    mp = pytest.MonkeyPatch()
    mp.setenv("AUTOSCHED_DYN_SCHED", "1")
    yield
    mp.undo()


@pytest.mark.parametrize("n, k, dtype", [(1032, 520, "fp16"), (344, 4104, "fp16"), (2056, 264, "bf16")])
def test_dispatched_sched_on_ragged_ms(builder, wgmma_gpu, n, k, dtype):
    g = handmade_dispatcher(builder, n, k, [(WG, SMALL)] + [(SCH, c) for c in SCHEDS], TOPS, backend="wgmma",
                            dtype=dtype)
    assert [g.family(m) for m in (1, 50, 200, 2048)] == [WG, SCH, SCH, SCH]
    w, gen = scaled_weight(n, k, dtype)
    assert_serves_in_turn(g, w, SEQUENCE, gen)
