"""The model-tune benchmark's summary (the GPU part runs on the device): each key from its own row,
the 'after' rows for the 1B figures, a missing measurement left out rather than guessed."""

from autosched.benchmarks.model_tune import MODEL_1B, MODEL_7B, summarize


def _row(model, fmt, phase, pct):
    return {"model": model, "format": fmt, "phase": phase, "pct_of_bw_limit": pct}


def test_summary_takes_each_key_from_its_own_row():
    rows = [_row(MODEL_1B, "fp16", "before", 60.0), _row(MODEL_1B, "q4f16_1", "before", 30.0),
            _row(MODEL_1B, "fp16", "after", 76.0), _row(MODEL_1B, "q4f16_1", "after", 47.0),
            _row(MODEL_7B, "q4f16_1", "as shipped", 81.0)]
    s = summarize(rows, {"seconds": 450.0})
    assert s["tune_model_1b_minutes"] == 7.5
    assert (s["pct_of_bw_limit_1b_fp16"], s["pct_of_bw_limit_1b_q4"]) == (76.0, 47.0)
    assert (s["pct_of_bw_limit_1b_fp16_before"], s["pct_of_bw_limit_1b_q4_before"]) == (60.0, 30.0)
    assert s["pct_of_bw_limit_7b_q4_as_shipped"] == 81.0
    assert s["bars"]["pct_of_bw_limit_1b_fp16"] == 75.0


def test_summary_leaves_out_what_was_not_measured():
    s = summarize([_row(MODEL_1B, "fp16", "before", 60.0)], None)
    assert "tune_model_1b_minutes" not in s
    assert "pct_of_bw_limit_1b_fp16" not in s and s["pct_of_bw_limit_1b_fp16_before"] == 60.0
    assert "pct_of_bw_limit_7b_q4_as_shipped" not in s
