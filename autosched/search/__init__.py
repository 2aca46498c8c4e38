"""Search strategies over a Space: each proposes configs and learns from their measurements.

A strategy never sees CUDA or a GPU: it gets configs' measurements back through `observe`.
"""

from autosched.search.strategies import (STRATEGIES, Exhaustive, ModelGuided, RandomSearch, Strategy,
                                         make_strategy)

__all__ = ["STRATEGIES", "Exhaustive", "ModelGuided", "RandomSearch", "Strategy", "make_strategy"]
