"""The synthetic runner's roofline (dynamic/synthetic.py): rates, the memory floor and a repeatable noise
that every micro-kernel template's `modelled` time shares.  MODELLED, not measured: these figures only
give the DietCode pipeline something with waves, padding and occupancy to learn on a machine with no GPU."""

from __future__ import annotations

import hashlib

PEAK_SM_TFLOPS = 4.5          # mma.sync FP16 per SM at full occupancy (about 600 TFLOP/s on 132 SMs)
WGMMA_PEAK_SM_TFLOPS = 7.0    # wgmma FP16 per SM (about 920 TFLOP/s on 132 SMs)
BANDWIDTH = 3.0e12            # B/s
SM_L2_BYTES_S = 1.1e11        # what one SM's loads draw from L2: ~64 bytes a clock at 1.7 GHz
LAUNCH_US = 3.0


def floor_us(M: int, N: int, K: int, extra_bytes: float = 0.0) -> float:
    """The memory floor: X, W and Y moved once (and `extra_bytes`) at the bandwidth."""
    return (2.0 * (N * K + M * K + M * N) + extra_bytes) / BANDWIDTH * 1e6


def noise(c: dict, M: int, N: int, K: int, *tag) -> float:
    """A fixed +-2% per (config, shape[, tag]): repeatable, as a real GPU's run-to-run order is not."""
    h = int(hashlib.sha256(repr((sorted(c.items()), M, N, K, *tag)).encode()).hexdigest()[:8], 16)
    return 1.0 + 0.04 * (h / 0xFFFFFFFF - 0.5)
