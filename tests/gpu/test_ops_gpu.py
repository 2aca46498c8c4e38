"""On a GPU: the Q4Linear op computes dequant(A_q, A_scale) . v on torch tensors."""

import numpy as np
import pytest

from autosched.workloads import GemvQ4F16

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("n, k", [(4096, 4096), (1000, 4128)])
def test_q4linear_matches_the_reference(n, k):
    torch = pytest.importorskip("torch")
    from autosched.ops import Q4Linear
    w = GemvQ4F16(n, k)
    x = w.inputs(seed=5)
    op = Q4Linear(x["A_q"], x["A_scale"])
    v = torch.from_numpy(x["V"]).cuda()
    y = op(v).cpu().numpy()
    assert w.check(y, w.reference(x)).ok
    with pytest.raises(ValueError, match="float16"):
        op(v.float())
    assert np.isfinite(y).all()
