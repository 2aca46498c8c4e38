"""The GPU relayout of q4 weights (measure/relayout_gpu.py) on the CPU: which layouts it takes over
from layouts.apply, its launch shapes, and NVRTC compiling each of its kernels."""

import numpy as np
import pytest

from autosched.build import BuildCache, Builder
from autosched.measure.relayout_gpu import NIBBLES, THREADS, handles, relayout_spec

WORDS = np.zeros((64, 32), dtype=np.uint32)
SCALES = np.zeros((64, 4), dtype=np.float16)


@pytest.mark.parametrize("layout, params, host, want", [
    ("q4_words", {"nibbles": "k", "n": 8, "k": 4}, WORDS, True),
    ("q4_words", {"nibbles": "rows", "n": 64, "k": 32}, WORDS, True),
    ("q4_words", {"nibbles": "natural", "n": 1, "k": 1}, WORDS, True),
    ("q4_words", {"nibbles": "k", "n": 24, "k": 4}, WORDS, False),         # layouts.apply names the misfit
    ("q4_words", {"nibbles": "k", "n": 8, "k": 3}, WORDS, False),
    ("q4_words", {"nibbles": "rows", "n": 1, "k": 1}, WORDS[:63], False),  # odd rows: the host's error
    ("q4_words", {"nibbles": "twisted", "n": 8, "k": 4}, WORDS, False),
    ("q4_words", {"nibbles": "k", "n": 8, "k": 4}, WORDS.view(np.int32), False),
    ("q4_words", {"nibbles": "k", "n": 8, "k": 4}, WORDS.ravel(), False),
    ("q4_scales", {"n": 16}, SCALES, True),
    ("q4_scales", {"n": 48}, SCALES, False),
    ("q4_scales", {"n": 16}, SCALES.astype(np.float32), False),
    ("identity", {}, WORDS, False),
])
def test_it_takes_the_q4_layouts_it_makes_bit_for_bit_and_leaves_the_rest(layout, params, host, want):
    assert handles(layout, params, host) is want


def test_launch_shapes_cover_every_element_and_pass_the_tile(h100):
    s = relayout_spec("q4_words", {"nibbles": "rows", "n": 4, "k": 2}, (10, 6), h100.sm_count, h100.arch)
    assert s.grid == (1, 1, 1) and s.block == (THREADS, 1, 1)
    assert s.name_expression == "relayout_q4_words<2>"
    assert [a.value for a in s.args if a.role == "scalar"] == [10, 6, 4, 2]
    big = relayout_spec("q4_scales", {"n": 8}, (128256, 512), h100.sm_count, h100.arch)
    assert big.grid[0] == 8 * h100.sm_count and [a.value for a in big.args if a.role == "scalar"] == [128256, 512, 8]
    with pytest.raises(ValueError, match="no GPU relayout for layout 'identity'"):
        relayout_spec("identity", {}, (4, 4), h100.sm_count, h100.arch)


def test_every_relayout_kernel_compiles_without_spills(h100, tmp_path):
    specs = [relayout_spec("q4_words", {"nibbles": n, "n": 4, "k": 2}, (64, 32), h100.sm_count, h100.arch)
             for n in NIBBLES]
    specs.append(relayout_spec("q4_scales", {"n": 4}, (64, 4), h100.sm_count, h100.arch))
    with Builder(workers=1, cache=BuildCache(tmp_path)) as b:
        for spec, binary in zip(specs, b.build_many(specs)):
            assert binary.ok, (spec.name_expression, binary.error)
            assert binary.resources.spills == 0
