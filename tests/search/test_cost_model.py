"""The cost model's features: knobs, workload parameters, and what the template derives."""

import math

from autosched.search.cost_model import Featurizer
from autosched.templates import SgemmTemplate
from autosched.workloads import Sgemm


def test_sgemm_derived_features_describe_the_launch(h100):
    t = SgemmTemplate()
    w = Sgemm(1, 4096, 4096)
    cfg = {"bm": 64, "bn": 128, "wm": 64, "wn": 32, "wniter": 1, "tm": 8, "tn": 8, "bk": 8, "stages": 2,
           "pad": 4, "splitk": 16}
    d = t.derived_features(cfg, w.params, h100)
    assert d["threads"] == 128 and d["blocks"] == 1 * 32 * 16
    assert d["m_used"] == 1 / 64 and d["n_used"] == 1.0 and d["k_per_split"] == 256
    assert d["smem_bytes"] == 4 * 2 * 8 * (64 + 4 + 128 + 4)
    assert 1 <= d["blocks_per_sm"] <= h100.max_threads_per_sm // 128
    assert math.isclose(d["waves"], d["blocks"] / (d["blocks_per_sm"] * h100.sm_count))
    # wmiter = 64*32 / (32*8*8*1) = 1: 64 FMAs per 16 shared loads
    assert d["fma_per_load"] == 4.0
    assert all(v >= 0 for v in d.values())


def test_featurizer_appends_derived_features_in_name_order(h100):
    t = SgemmTemplate()
    w = Sgemm(64, 512, 256)
    space = t.space(w, h100)
    cfg = t.default_config(w, h100)
    plain = Featurizer(space, w.params)
    derived = Featurizer(space, w.params, lambda c, p: t.derived_features(c, p, h100))
    a, b = plain.row(cfg), derived.row(cfg)
    d = t.derived_features(cfg, w.params, h100)
    assert b[:len(a)] == a and len(b) == len(a) + len(d)
    assert b[len(a):] == [math.log2(d[k] + 1) for k in sorted(d)]
    # another shape's params give that shape's derived values (prior samples of other shapes)
    other = Sgemm(4096, 4096, 4096).params
    assert derived.row(cfg, other)[len(a):] != b[len(a):]
