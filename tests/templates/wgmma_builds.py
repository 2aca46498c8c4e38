"""The checks every wgmma-family build must pass (hgemm_wgmma, its split-K and its clusters): one
place, so a new check reaches all three templates' compile tests."""

from autosched.build import BuildCache, Builder


def assert_wgmma_builds_clean(specs, cache_dir, device) -> None:
    """Build `specs` on two workers into a fresh cache under `cache_dir` and check each binary: an
    sm_90a ELF cubin, no spills or stack, no serialized wgmma (ptxas C7518 "Potential Performance
    Loss", or C7508), registers within the block, and with two consumers the setmaxnreg pool."""
    with Builder(workers=2, cache=BuildCache(cache_dir)) as b:
        for spec, binary in zip(specs, b.build_many(specs)):
            assert binary.ok, (spec.name_expression, binary.error)
            r = binary.resources
            assert binary.cubin[:4] == b"\x7fELF"
            assert r.spills == 0 and r.stack_bytes == 0, (spec.name_expression, r)
            assert "sm_90a" in binary.log and "C7508" not in binary.log, binary.log
            assert "Potential Performance Loss" not in binary.log, (spec.name_expression, binary.log)
            if spec.threads == 384:        # two consumers
                # setmaxnreg.inc waits for registers the producer's .dec frees in the CTA's pool:
                # 128 x 40 + 256 x 232 must fit in the 384 x R the CTA holds at entry
                assert 128 * 40 + 256 * 232 <= 384 * r.registers, (spec.name_expression, r)
            assert r.registers * spec.threads <= device.regs_per_block
