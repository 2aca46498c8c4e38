"""Coordinate descent over a decode step's GEMV configs, timed inside the step.

The tuner ranks a shape's configs by their time alone (the L2 flushed, one kernel); inside a decode
step the kernels overlap under programmatic launch and the L2 holds weights streamed in ahead, and a
config's time alone does not rank it there.  On the 7B q4f16_1 step (H100, 2026-11-26) 600 more
isolated trials a shape found gate_up and qkv configs faster alone that made the step slower, while a
gate_up config one knob away from the served one (ts 64 for 32), never measured alone, made the step
29 us (1.8%) faster (bench/results/checks/step-neighbours-7b-*.json).

So after the step verification has picked among a matmul's ranked candidates, the engine walks one
knob at a time from each served config: every neighbour (each other value of each knob that keeps
the config in the space) is timed in the step, and the fastest that beats the served step by more
than MIN_GAIN is timed again right after the served one; only if it wins that second time too is it
served.  Rounds over the matmuls repeat until one moves nothing or ROUNDS are done; each round times
every neighbour again (the other matmuls may have moved since, and a move's gain depends on what runs
beside it: qkv's hint 0 paid 9 us only once gate_up had moved), except the configs a matmul has
already served.
"""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass
from typing import Callable

ROUNDS = 3
# a move must beat the served step by this share twice: steps timed back to back differ by ~0.1-0.2%
# (the 7B's served step over three re-timings: 1607.8-1612.1 us)
MIN_GAIN = 0.002


@dataclass(frozen=True)
class Move:
    name: str            # the matmul
    config: dict         # what it serves now
    change: str          # "knob old->new, ..." from the config it left
    from_us: float       # the step with the config it left, timed right before
    us: float            # the step with this one


def config_key(config: dict) -> str:
    return json.dumps(config, sort_keys=True)


def neighbours(space, config: dict, keep: Callable[[dict], bool] | None = None) -> list[dict]:
    """The configs of `space` one knob away from `config` (each other value of each knob), in the
    space's knob order, those `keep` accepts."""
    out = []
    for knob in space.knobs:
        for v in knob.values:
            if v == config[knob.name]:
                continue
            c = {**config, knob.name: v}
            if space.contains(c) and (keep is None or keep(c)):
                out.append(space.validate(c))
    return out


def change(old: dict, new: dict) -> str:
    return ", ".join(f"{k} {old[k]}->{new[k]}" for k in new if old.get(k) != new[k])


def descend(names, served: Callable[[str], dict], space_of: Callable[[str], object],
            keep_of: Callable[[str], Callable[[dict], bool] | None], time_step: Callable[[], float],
            time_config: Callable[[str, dict], float], serve: Callable[[str, dict, Move], None],
            prepare: Callable[[str, list[dict]], None] | None = None, rounds: int = ROUNDS,
            min_gain: float = MIN_GAIN) -> list[Move]:
    """Walk `names` (matmuls, in order) one knob at a time from `served(name)`; the moves made.
    time_step() times the step as served, time_config(name, config) with `config` serving `name`
    (raising where it fails to build or run: that neighbour is skipped with a warning), serve()
    makes a move; prepare(name, configs) may build a matmul's neighbours at once before they are
    timed."""
    moves: list[Move] = []
    left = {name: {config_key(served(name))} for name in names}      # configs each has served
    base = time_step()
    for _ in range(rounds):
        moved = False
        for name in names:
            cur = served(name)
            todo = [c for c in neighbours(space_of(name), cur, keep_of(name)) if config_key(c) not in left[name]]
            if not todo:
                continue
            if prepare is not None:
                prepare(name, todo)
            best = None
            for c in todo:
                us = _timed(time_config, name, c)
                if us is not None and us < base * (1 - min_gain) and (best is None or us < best[0]):
                    best = (us, c)
            if best is None:
                continue
            again = time_step()
            us = _timed(time_config, name, best[1])
            if us is not None and us < again * (1 - min_gain):
                move = Move(name, best[1], change(cur, best[1]), again, us)
                serve(name, best[1], move)
                left[name].add(config_key(best[1]))
                moves.append(move)
                base, moved = us, True
            else:
                base = again
        if not moved:
            break
    return moves


def _timed(time_config, name: str, config: dict) -> float | None:
    try:
        return time_config(name, config)
    except Exception as e:     # a neighbour that fails to build or run is not a fault of the engine
        warnings.warn(f"{name}: config {config_key(config)} could not be timed in the step: {e}", RuntimeWarning,
                      stacklevel=3)
        return None
