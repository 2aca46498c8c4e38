"""On an sm_90 GPU: hgemm_wgmma_swap micro-kernels served for a dynamic M by ops.HgemmDispatch (wgmma
backend), against float64, on ragged Ms called in a row through one dispatcher: the X and Y tensor maps
encoded per M (a map of another M reused would read or write the wrong rows), token tiles clipped at
M, FP16 and BF16, K split with the slices summed in the workspace or in a cluster.  With hgemm_wgmma_swap.cuh's GPU tests and sanitizers (`gpu_check.py swap`), what has
to pass before knobs.WGMMA_SWAP flips; it keeps the switch on for the module whatever the environment."""

import pytest

from gemm_checks import assert_serves_in_turn, handmade_dispatcher, scaled_weight

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")

SWP, WG = "hgemm_wgmma_swap", "hgemm_wgmma"
SWAPS = [{"bw": 64, "bt": 8, "swizzle": 128, "stages": 12, "split_k": 1, "reduce": "workspace"},
         {"bw": 64, "bt": 24, "swizzle": 64, "stages": 7, "split_k": 3, "reduce": "workspace"},
         {"bw": 128, "bt": 40, "swizzle": 128, "stages": 6, "split_k": 2, "reduce": "workspace"},
         # the slices summed in one cluster's shared memory: every work unit a CTA, past the SM count at 2048
         {"bw": 64, "bt": 32, "swizzle": 128, "stages": 8, "split_k": 3, "reduce": "cluster"}]
PLAIN = {"bm": 128, "bn": 128, "consumers": 2, "swizzle": 128, "stages": 5, "group": 8}
TOPS = [16, 96, 256, 1024]
SEQUENCE = [100, 1, 7, 16, 17, 95, 96, 97, 255, 256, 257, 1000, 2048, 5, 100]


@pytest.fixture(scope="module", autouse=True)
def switch():
    mp = pytest.MonkeyPatch()
    mp.setenv("AUTOSCHED_WGMMA_SWAP", "1")
    yield
    mp.undo()


@pytest.mark.parametrize("n, k, dtype", [(768, 768, "fp16"), (264, 4104, "fp16"), (1032, 520, "bf16")])
def test_dispatched_swap_on_ragged_ms(builder, wgmma_gpu, n, k, dtype):
    g = handmade_dispatcher(builder, n, k, [(SWP, c) for c in SWAPS] + [(WG, PLAIN)], TOPS, backend="wgmma",
                            dtype=dtype)
    assert [g.family(m) for m in (1, 50, 200, 1000, 2048)] == [SWP, SWP, SWP, SWP, WG]
    w, gen = scaled_weight(n, k, dtype)
    assert_serves_in_turn(g, w, SEQUENCE, gen)
