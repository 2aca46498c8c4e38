"""The wgmma kernels are one pipeline (hgemm_wgmma.cuh: Ring, roles, HgemmWgmma's loads, mma and
epilogue) with the variants as policies, and the wgmma asm wrappers are generated, one asm template for
every N; the issue-43 bar on their size holds."""

import re
from importlib import resources

KERNELS = resources.files("autosched.kernels")
WGMMA = sorted(p.name for p in KERNELS.iterdir() if re.fullmatch(r"hgemm_wgmma\w*\.cuh", p.name))


def test_the_wgmma_kernels_stay_under_their_line_budget():
    lines = sum(len(KERNELS.joinpath(f).read_text().splitlines()) for f in WGMMA)
    assert len(WGMMA) >= 5 and lines <= 1200, (WGMMA, lines)


def test_one_generated_asm_template_serves_every_wgmma_n():
    text = {f: KERNELS.joinpath(f).read_text() for f in WGMMA}
    assert sum(t.count("\"wgmma.mma_async") for t in text.values()) == 1      # in asm strings
    shapes = re.findall(r"^AUTOSCHED_WGMMA\((\d+), (\d+), (\d+), (\d+), (\d+), (\d+), (\d+)\)$",
                        text["hgemm_wgmma.cuh"], re.M)
    assert {int(s[0]) for s in shapes} == {8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 128, 168, 192, 256}
    for n, acc, da, db, sd, ta, tb in (tuple(map(int, s)) for s in shapes):   # operands numbered after the accumulators
        assert acc == n // 2 and [da, db, sd, ta, tb] == [acc, acc + 1, acc + 2, acc + 3, acc + 4]


def test_every_variant_runs_the_shared_ring():
    for f in WGMMA:
        if f != "hgemm_wgmma_splitk.cuh":                # split-K is HgemmWgmma's SPLIT_K policy
            assert "Pipe::fill(" in KERNELS.joinpath(f).read_text() and "Pipe::drain(" in KERNELS.joinpath(f).read_text(), f
    assert "HgemmWgmma<BF16, A_MN, B_MN, BM, BN, SWZ, STAGES, CONSUMERS, GROUP, SPLIT_K>" in \
        KERNELS.joinpath("hgemm_wgmma_splitk.cuh").read_text()
