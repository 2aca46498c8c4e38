"""Search strategies over a Space: each proposes configs and learns from their measurements.

A strategy never sees CUDA or a GPU: it gets configs' measurements back through `observe`.
"""

from autosched.search.strategies import (STRATEGIES, Exhaustive, ModelGuided, RandomSearch, Strategy,
                                         make_strategy)

STRATEGY_NAMES = tuple(STRATEGIES)

__all__ = ["STRATEGIES", "STRATEGY_NAMES", "Exhaustive", "ModelGuided", "RandomSearch", "Strategy", "make_strategy"]
