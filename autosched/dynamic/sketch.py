"""Micro-kernel sketches for a dynamic M: the template is a sketch dimension (a micro-kernel is
(family, config)), drawn first, then its tiles jointly under the target's limits by the template's own
sampler (templates/<family>.py: hgemm_dyn's warps and MMA tiles, wgmma's warpgroups, ...), and mutated
without touching the tiles bound to threads.  Here only what is the same for every template: the draw
of the template, and the seeds (the rule-based configs) a search starts from."""

from __future__ import annotations

import random

from autosched.space import config_hash
from autosched.templates.micro_kernels import micro_kernel


def tile_of(family: str, config: dict) -> tuple[int, int]:
    """(rows of the output, columns) one tile (a CTA, or a persistent loop's step) covers."""
    return micro_kernel(family).tile(config)


def threads_of(family: str, config: dict) -> int:
    return micro_kernel(family).threads(config)


def unroll_of(family: str, config: dict) -> int:
    return micro_kernel(family).unroll(config)


def describe_any(family: str, config: dict) -> str:
    return micro_kernel(family).describe(config)


def sample_any(spaces: dict, extents: tuple[int, int], rng: random.Random, local_pad: int = 1) -> tuple[str, dict]:
    """(family, config): the template drawn first (uniformly among `spaces`, family -> Space), then
    its tiles jointly."""
    fam = rng.choice(sorted(spaces)) if len(spaces) > 1 else next(iter(spaces))
    return fam, micro_kernel(fam).sample(spaces[fam], extents, rng, local_pad=local_pad)


def mutate_any(spaces: dict, family: str, config: dict, rng: random.Random, extents) -> dict | None:
    return micro_kernel(family).mutate(spaces[family], config, rng, extents)


def seed_kernels(dw, templates, device) -> list[tuple[str, dict, list[tuple[int, int]]]]:
    """(family, config, [(first M, last M), ...]) of the rule-based configs that ops.hgemm serves by
    default over dw's range (each template's `seeds`: a default ladder, or the configs measured best
    over the Ms they were best at), each config once with the Ms of the range it serves, and only
    those the template's space holds for dw.largest.  Measured first, they make the search start from
    the known-good kernels and give selection its floor: no instance served worse than its ladder's
    kernel."""
    out: dict[tuple[str, str], tuple[str, dict, list]] = {}
    for t in templates:
        space = t.space(dw.largest, device)
        served = [(max(first, dw.lo), min(last, dw.hi), cfg)
                  for first, last, cfg in t.seeds(space, dw.N, dw.lo, dw.hi, device.sm_count)
                  if max(first, dw.lo) <= min(last, dw.hi)]
        for first, last, cfg in served:
            if not space.contains(cfg):
                continue
            key = (t.family, config_hash(cfg))
            out.setdefault(key, (t.family, space.validate(cfg), []))[2].append((first, last))
    return list(out.values())
