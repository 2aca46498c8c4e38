"""Schedule spaces: knobs with declared values, and named constraints over them.

A config is a flat dict knob -> value.  Constraints name the knobs they read, so enumeration is a
depth-first walk that applies each constraint as soon as its knobs are set: the spaces here have
millions of raw points and thousands of valid ones, and the walk never visits most of the rest.
Nothing here knows about CUDA; a template builds its Space from the workload and the device limits.
"""

from __future__ import annotations

import hashlib
import json
import random
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator


class ConfigError(ValueError):
    """A config that is not a point of the space: unknown knob, undeclared value, broken rule."""


@dataclass(frozen=True)
class Knob:
    name: str
    values: tuple
    doc: str = ""


@dataclass(frozen=True)
class Constraint:
    name: str          # shown when a config is refused, so say the rule in words
    knobs: tuple[str, ...]
    check: Callable[..., bool]   # called with the knob values in `knobs` order

    def holds(self, cfg: dict) -> bool:
        # a rule that cannot even be evaluated on a config (e.g. a tile ratio of zero when an
        # earlier rule is broken too) does not hold for it: mutation and crossover check whole
        # configs against every rule, not in the walk's order
        try:
            return bool(self.check(*(cfg[k] for k in self.knobs)))
        except ArithmeticError:
            return False


def config_hash(config: dict) -> str:
    """Stable hash of a config: keys the build cache and the database."""
    blob = json.dumps(config, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


@dataclass
class Space:
    knobs: list[Knob]
    constraints: list[Constraint] = field(default_factory=list)

    def __post_init__(self):
        names = [k.name for k in self.knobs]
        if len(set(names)) != len(names):
            raise ValueError(f"duplicate knob names in {names}")
        self._index = {k.name: i for i, k in enumerate(self.knobs)}
        for c in self.constraints:
            missing = [k for k in c.knobs if k not in self._index]
            if missing:
                raise ValueError(f"constraint {c.name!r} reads unknown knobs {missing}")
        # constraints checked at the depth where their last knob is assigned
        self._at_depth: list[list[Constraint]] = [[] for _ in self.knobs]
        for c in self.constraints:
            depth = max(self._index[k] for k in c.knobs) if c.knobs else 0
            self._at_depth[depth].append(c)

    @property
    def names(self) -> list[str]:
        return [k.name for k in self.knobs]

    def knob(self, name: str) -> Knob:
        return self.knobs[self._index[name]]

    def raw_size(self) -> int:
        size = 1
        for k in self.knobs:
            size *= len(k.values)
        return size

    def restricted(self, name: str, keep: Callable[[dict], bool]) -> "Space":
        """This space with one more rule over whole configs (e.g. "measured in the recording")."""
        names = tuple(self.names)
        rule = Constraint(name, names, lambda *vals: keep(dict(zip(names, vals))))
        return Space(list(self.knobs), list(self.constraints) + [rule])

    # -- validation ---------------------------------------------------------------------------
    def violations(self, config: dict) -> list[str]:
        """Every reason the config is not in the space (empty list: it is)."""
        if not isinstance(config, dict):
            return [f"a config is a dict of knob values ({', '.join(self.names)}), got {config!r}"]
        problems = []
        # keys of any type may arrive (JSON objects only have strings, Python callers anything):
        # ordered by type and text, as sorted() cannot compare 1 with "bm"
        unknown = sorted(set(config) - set(self._index), key=lambda k: (type(k).__name__, str(k)))
        if unknown:
            problems.append(f"unknown knobs {unknown}; the space has {self.names}")
        for k in self.knobs:
            if k.name not in config:
                problems.append(f"missing knob {k.name!r}")
            elif not any(_same(config[k.name], v) for v in k.values):
                problems.append(f"{k.name}={config[k.name]!r} is not one of {list(k.values)}"
                                + _type_hint(config[k.name], k.values))
        if problems:
            return problems
        return [f"rule broken: {c.name}" for c in self.constraints if not c.holds(config)]

    def validate(self, config: dict) -> dict:
        """The config with values normalised to the declared ones, or ConfigError naming every
        problem.  Only values that pass here ever reach a template's render."""
        problems = self.violations(config)
        if problems:
            raise ConfigError("invalid config " + _describe(config) + ": " + "; ".join(problems))
        out = {}
        for k in self.knobs:
            out[k.name] = next(v for v in k.values if _same(config[k.name], v))
        return out

    def contains(self, config: dict) -> bool:
        return not self.violations(config)

    def nearest(self, config: dict) -> dict:
        """`config` itself (validated) if the space holds it, else the point of the space that
        differs from it in the fewest knobs (the first in walk order among ties): how a template's
        rule-based default adapts to a shape that rules part of it out."""
        if self.contains(config):
            return self.validate(config)
        # a knob the space lacks differs from every point alike
        best = min(self, key=lambda c: sum(k not in c or c[k] != v for k, v in config.items()), default=None)
        if best is None:
            raise ConfigError(f"no config is near {_describe(config)}: the space is empty "
                              f"(every point breaks a rule: {[n for n, _ in self.prune_report()]})")
        return best

    # -- enumeration ---------------------------------------------------------------------------
    def __iter__(self) -> Iterator[dict]:
        cfg: dict[str, Any] = {}

        def walk(depth: int):
            if depth == len(self.knobs):
                yield dict(cfg)
                return
            knob = self.knobs[depth]
            for v in knob.values:
                cfg[knob.name] = v
                if all(c.holds(cfg) for c in self._at_depth[depth]):
                    yield from walk(depth + 1)
            cfg.pop(knob.name, None)

        yield from walk(0)

    def _walk_once(self) -> list[dict]:
        # a space of tens of thousands takes about a second to walk: once a Space
        if getattr(self, "_walked", None) is None:
            self._walked = list(self)
        return self._walked

    def enumerate(self) -> list[dict]:
        """Every config, in walk order, as copies: callers shuffle and edit what they get."""
        return [dict(c) for c in self._walk_once()]

    def size(self) -> int:
        return len(self._walk_once())

    def prune_report(self) -> list[tuple[str, int]]:
        """(constraint, configs it alone removes first) in walk order, for `tune`'s space printout."""
        removed: dict[str, int] = {c.name: 0 for c in self.constraints}
        cfg: dict[str, Any] = {}

        def subtree(depth: int) -> int:
            size = 1
            for k in self.knobs[depth:]:
                size *= len(k.values)
            return size

        def walk(depth: int):
            if depth == len(self.knobs):
                return
            knob = self.knobs[depth]
            for v in knob.values:
                cfg[knob.name] = v
                failed = next((c for c in self._at_depth[depth] if not c.holds(cfg)), None)
                if failed is not None:
                    removed[failed.name] += subtree(depth + 1)
                else:
                    walk(depth + 1)
            cfg.pop(knob.name, None)

        walk(0)
        return [(name, n) for name, n in removed.items() if n]

    # -- sampling and mutation ------------------------------------------------------------------
    def sample(self, rng: random.Random, max_tries: int = 10000) -> dict:
        """A random valid config: each knob drawn among the values valid given the knobs before it
        (restarting on a dead end).  Cheap even when the valid fraction is tiny, but NOT uniform
        over the valid set: sparse branches are drawn more often.  RandomSearch shuffles the
        enumeration instead, which is exactly uniform."""
        for _ in range(max_tries):
            cfg: dict[str, Any] = {}
            for depth, knob in enumerate(self.knobs):
                choices = list(knob.values)
                rng.shuffle(choices)
                for v in choices:
                    cfg[knob.name] = v
                    if all(c.holds(cfg) for c in self._at_depth[depth]):
                        break
                else:
                    break
            else:
                return cfg
        raise ConfigError("could not draw a valid config: the space may be empty")

    def neighbours(self, config: dict) -> list[dict]:
        """Valid configs that differ from `config` in exactly one knob."""
        out = []
        for knob in self.knobs:
            for v in knob.values:
                if _same(v, config[knob.name]):
                    continue
                cand = dict(config)
                cand[knob.name] = v
                if all(c.holds(cand) for c in self.constraints):
                    out.append(cand)
        return out

    def mutate(self, config: dict, rng: random.Random) -> dict | None:
        options = self.neighbours(config)
        return rng.choice(options) if options else None


def _same(a, b) -> bool:
    """Declared values are ints or strings; 1 must not match "1" or True."""
    return type(a) is type(b) and a == b


def _type_hint(value, declared) -> str:
    """Where `value` equals a declared value of another type (128.0, True, "128" read from a
    file), say so: the printed value alone looks right."""
    def equal(v) -> bool:
        try:
            return bool(v == value) or str(v) == str(value)
        except Exception:       # arrays and other values without a plain truth value
            return False
    match = next((v for v in declared if equal(v)), None)
    if match is None or type(match) is type(value):
        return ""
    return f" (a {type(value).__name__}; the space's values are {type(match).__name__}s)"


def _describe(config) -> str:
    """The config as JSON where it is JSON, else its repr (keys of mixed types, values like sets)."""
    try:
        return json.dumps(config, sort_keys=True)
    except (TypeError, ValueError):
        return repr(config)


class SpaceUnion:
    """Several named spaces searched as one, the name a knob: a config is ``{tag: name, **knobs}``
    with the knobs of that member.  It answers what a search strategy asks of a Space (enumerate,
    sample, mutate, contain), so a workload served by several templates is tuned in one run over
    all of them.  Mutation stays within a member (one knob changes, and the tag is a knob whose
    change would rewrite every other); crossover of two members' configs fails `contains`."""

    def __init__(self, members: dict[str, Space], tag: str = "template"):
        if not members:
            raise ValueError("a union of no spaces")
        if any(tag in s.names for s in members.values()):
            raise ValueError(f"member spaces may not have a knob named {tag!r}")
        self.members = dict(members)
        self.tag = tag
        # the featurizer's columns: the tag, then every member knob once (values merged); a knob a
        # member lacks reads as absent there
        knobs: dict[str, list] = {}
        for s in self.members.values():
            for k in s.knobs:
                vals = knobs.setdefault(k.name, [])
                vals += [v for v in k.values if not any(_same(v, w) for w in vals)]
        self.knobs = [Knob(tag, tuple(self.members), "the template (kernel family) serving the config")] + [
            Knob(n, tuple(v)) for n, v in knobs.items()]

    @property
    def names(self) -> list[str]:
        return [k.name for k in self.knobs]

    def split(self, config: dict) -> tuple[str, dict]:
        if not isinstance(config, dict):
            raise ConfigError(f"a config is a dict of knob values with {self.tag!r} naming one of "
                              f"{list(self.members)}, got {config!r}")
        rest = dict(config)
        name = rest.pop(self.tag, None)
        if not isinstance(name, str) or name not in self.members:
            raise ConfigError(f"config {_describe(config)}: {self.tag} must be one of "
                              f"{list(self.members)}")
        return name, rest

    def join(self, name: str, config: dict) -> dict:
        return {self.tag: name, **config}

    def raw_size(self) -> int:
        return sum(s.raw_size() for s in self.members.values())

    def size(self) -> int:
        return sum(s.size() for s in self.members.values())

    def restricted(self, name: str, keep: Callable[[dict], bool]) -> "SpaceUnion":
        return SpaceUnion({m: s.restricted(name, lambda c, m=m: keep(self.join(m, c)))
                           for m, s in self.members.items()}, self.tag)

    def violations(self, config: dict) -> list[str]:
        try:
            name, rest = self.split(config)
        except ConfigError as e:
            return [str(e)]
        return [f"{name}: {p}" for p in self.members[name].violations(rest)]

    def validate(self, config: dict) -> dict:
        name, rest = self.split(config)
        try:
            return self.join(name, self.members[name].validate(rest))
        except ConfigError as e:
            # the member's message lists its knobs only: say whose they are
            raise ConfigError(f"{self.tag} {name}: {e}") from None

    def contains(self, config: dict) -> bool:
        return not self.violations(config)

    def nearest(self, config: dict) -> dict:
        name, rest = self.split(config)
        return self.join(name, self.members[name].nearest(rest))

    def __iter__(self) -> Iterator[dict]:
        for name, s in self.members.items():
            for c in s:
                yield self.join(name, c)

    def enumerate(self) -> list[dict]:
        return list(self)

    def prune_report(self) -> list[tuple[str, int]]:
        return [(f"{m}: {rule}", n) for m, s in self.members.items() for rule, n in s.prune_report()]

    def sample(self, rng: random.Random, max_tries: int = 10000) -> dict:
        """A member drawn uniformly, then a config of it (Space.sample); members whose space is empty
        are skipped."""
        names = list(self.members)
        rng.shuffle(names)
        for name in names:
            try:
                return self.join(name, self.members[name].sample(rng, max_tries))
            except ConfigError:
                continue
        raise ConfigError("could not draw a valid config: every member space may be empty")

    def neighbours(self, config: dict) -> list[dict]:
        name, rest = self.split(config)
        return [self.join(name, c) for c in self.members[name].neighbours(rest)]

    def mutate(self, config: dict, rng: random.Random) -> dict | None:
        options = self.neighbours(config)
        return rng.choice(options) if options else None
