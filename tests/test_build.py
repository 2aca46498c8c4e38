"""autosched.build with real NVRTC (no GPU needed): seeded samples of every (tx, load, compute, vec_c)
combination of the 12288x4096 space, and a 1024x4128 config with a K tail, compile to sm_90 cubins
with a ptxas report; parse_ptxas; the disk cache; compile errors come back as failed Binaries."""

import dataclasses
import itertools
import random
import struct
import time

import pytest

from autosched.build import (BuildCache, Builder, Resources, cache_key, compile_spec, nvrtc_version,
                             parse_ptxas)
from autosched.workloads import GemvQ4F16

EM_CUDA = 190      # ELF e_machine of a cubin


def allowed_combo(tx, load, compute, vec_c) -> bool:
    """Combinations the seed's rules leave (see tests/templates/test_gemv_q4f16.py)."""
    if vec_c == 1 and compute == "n":
        return False
    return not (tx == "s" and load == "k" and compute == "n")


COMBOS = [c for c in itertools.product("rs", "kn", "kn", (1, 2)) if allowed_combo(*c)]
CASES = ["-".join(map(str, c)) for c in COMBOS] + ["1024x4128"]
PER_COMBO = 2


def combo_id(cfg) -> str:
    return f"{cfg['tx']}-{cfg['load']}-{cfg['compute']}-{cfg['vec_c']}"


@pytest.fixture(scope="module")
def built(h100, gemv_template, tmp_path_factory):
    """case id -> [(spec, binary)], all compiled in one go on two workers into a fresh cache."""
    rng = random.Random(1234)
    w = GemvQ4F16.from_shape("12288x4096")
    configs = gemv_template.space(w, h100).enumerate()
    specs = {}
    for case in CASES[:-1]:
        pool = [c for c in configs if combo_id(c) == case]
        specs[case] = [gemv_template.render(w, c, h100)
                       for c in rng.sample(pool, min(PER_COMBO, len(pool)))]
    odd = GemvQ4F16.from_shape("1024x4128")      # K/8 = 516 words: pick a config with a K tail
    tail = [c for c in gemv_template.space(odd, h100) if (odd.K // 8) % (c["tr"] * c["tile_r"] // 8)]
    specs["1024x4128"] = [gemv_template.render(odd, rng.choice(tail), h100)] if tail else []

    flat = [s for ss in specs.values() for s in ss]
    with Builder(workers=2, cache=BuildCache(tmp_path_factory.mktemp("build-cache"))) as builder:
        binaries = iter(list(builder.build_many(flat)))
    return {case: [(s, next(binaries)) for s in ss] for case, ss in specs.items()}


def template_args(name_expression: str) -> list[int]:
    inner = name_expression[name_expression.index("<") + 1:name_expression.rindex(">")]
    return [int(a) for a in inner.split(",")]


@pytest.mark.parametrize("case", CASES)
def test_real_configs_compile(case, built):
    pairs = built[case]
    assert pairs, f"no config of {case} in the space"
    nvrtc = nvrtc_version()
    for spec, b in pairs:
        assert b.ok, f"{spec.name_expression}: {b.error}"
        assert b.error is None and not b.cached
        assert b.name_expression == spec.name_expression
        assert b.key == cache_key(spec, nvrtc)
        # an sm_90 cubin
        assert len(b.cubin) > 64 and b.cubin[:4] == b"\x7fELF"
        assert struct.unpack_from("<H", b.cubin, 18)[0] == EM_CUDA
        # ptxas report
        assert 0 < b.resources.registers <= 255, b.log
        assert b.resources == parse_ptxas(b.log)
        # the mangled entry of exactly this instantiation, present in the cubin
        mangled = "_Z10gemv_q4f16I" + "".join(f"Li{a}E" for a in template_args(spec.name_expression)) + "E"
        assert b.symbol.startswith(mangled), (b.symbol, mangled)
        assert b.symbol.encode() in b.cubin
        assert b.symbol in b.log


def test_parse_ptxas():
    log = ("ptxas info    : 50 bytes gmem\n"
           "ptxas info    : Compiling entry function '_Z3fooPf' for 'sm_90'\n"
           "ptxas info    : Function properties for _Z3fooPf\n"
           "ptxas         .     24 bytes stack frame, 8 bytes spill stores, 12 bytes spill loads\n"
           "ptxas info    : Used 40 registers, used 1 barriers, 2048 bytes smem, 400 bytes cmem[0]\n")
    r = parse_ptxas(log)
    assert r == Resources(registers=40, smem_static=2048, stack_bytes=24, spill_stores=8,
                          spill_loads=12)
    assert r.spills == 20
    assert parse_ptxas("") == Resources()


@pytest.fixture(scope="module")
def default_spec(h100, gemv_template):
    w = GemvQ4F16.from_shape("4096x4096")
    return gemv_template.render(w, gemv_template.default_config(w, h100), h100)


def test_second_build_is_served_from_the_cache(default_spec, tmp_path):
    with Builder(workers=2, cache=BuildCache(tmp_path)) as builder:
        first = builder.build(default_spec)
        builder.close()         # waits for the done-callbacks, which count the build
        assert builder.compiled == 1 and builder.compile_s == first.compile_s > 0
    # close() waits for the pool, so the first result is on disk now
    with Builder(workers=2, cache=BuildCache(tmp_path)) as builder:
        second = builder.build(default_spec)
        assert builder._pool is None, "a cache hit started the compiler pool"
    assert first.ok and not first.cached
    assert second.ok and second.cached
    assert builder.compiled == 0 and builder.compile_s == 0.0     # a hit is no build
    assert second.cubin == first.cubin
    assert (second.key, second.symbol, second.resources, second.name_expression) == \
        (first.key, first.symbol, first.resources, first.name_expression)


def test_cache_key_changes_with_the_instantiation(default_spec):
    other = dataclasses.replace(default_spec, name_expression=default_spec.name_expression + " ")
    assert cache_key(default_spec, "13.0") != cache_key(other, "13.0")
    assert cache_key(default_spec, "13.0") != cache_key(default_spec, "12.8")


def test_rebuild_right_after_build_is_a_cache_hit(default_spec, tmp_path, monkeypatch):
    put = BuildCache.put

    def slow_put(self, b):      # widens the window that exists anyway (seen with no delay too)
        time.sleep(0.5)
        put(self, b)

    monkeypatch.setattr(BuildCache, "put", slow_put)
    with Builder(workers=2, cache=BuildCache(tmp_path)) as builder:
        first = builder.build(default_spec)
        second = builder.build(default_spec)
    assert first.ok and second.cached


def test_a_spec_asked_for_again_while_in_flight_joins_its_build(default_spec, tmp_path):
    with Builder(workers=2, cache=BuildCache(tmp_path)) as builder:
        first = builder.submit(default_spec)
        again = builder.submit(dataclasses.replace(default_spec))   # equal spec, another object
        assert again is first, "a second compile of a kernel already building was started"
        assert first.result().ok and not first.result().cached
        later = builder.submit(default_spec)                         # done: now from the disk cache
        assert later is not first and later.result().cached


def test_broken_source_is_a_failed_binary_not_an_exception(default_spec, tmp_path):
    broken = dataclasses.replace(default_spec, source="this is not C++ {\n")
    with Builder(workers=2, cache=BuildCache(tmp_path)) as builder:
        b = builder.build(broken)
        again = builder.build(broken)
    assert not b.ok
    assert isinstance(b.error, str) and "error" in b.error.lower()
    assert b.cubin == b"" and b.symbol == ""
    assert not again.cached                        # failures are not cached
    assert not any(tmp_path.rglob("*.cubin"))


def test_static_asserts_catch_a_config_outside_the_space(default_spec):
    # TILE_S = 2 > LN = 1: refused by the space, and by the .cuh if it ever slipped past Python
    args = template_args(default_spec.name_expression)
    args[8], args[11], args[12] = 2, 1, 1          # TILE_S, LN, LK
    bad = dataclasses.replace(default_spec,
                              name_expression="gemv_q4f16<" + ", ".join(map(str, args)) + ">")
    b = compile_spec(bad)
    assert not b.ok and "TILE_S > n is not in the space" in b.error


def test_the_cache_builds_in_process_once(default_spec, tmp_path):
    cache = BuildCache(tmp_path)
    first = cache.build(default_spec)
    second = cache.build(default_spec)
    assert first.ok and not first.cached and second.cached and second.cubin == first.cubin


def test_start_brings_up_every_pool_process_before_the_first_build(default_spec, tmp_path):
    with Builder(workers=2, cache=BuildCache(tmp_path)) as b:
        assert b.start() is b
        deadline = time.monotonic() + 60
        while len(b._pool._processes) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(b._pool._processes) == 2 and b.compiled == 0      # up, nothing built yet
        binary = b.build(default_spec)
        b.close()               # waits for the done-callbacks, which count the build
        assert binary.ok and b.compiled == 1
