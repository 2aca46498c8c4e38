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


def test_a_row_reports_its_median_round_and_the_range():
    """Each round has its own copy bandwidth: the row is the round whose share is the median (a
    round measured, never an average), with the range of the rounds' shares beside it; the summary
    carries that range under the key with _range appended."""
    from autosched.benchmarks.model_tune import median_round
    rounds = [{"copy_gbps": bw, "tokens_per_s": tps, "pct_of_bw_limit": p}
              for bw, tps, p in ((2970, 620, 77.8), (2905, 622, 79.9), (2950, 621, 78.6), (2980, 619, 77.5),
                                 (2940, 621, 78.9))]
    assert median_round(rounds) == rounds[2]
    assert median_round(rounds[:4])["pct_of_bw_limit"] == 77.8          # the lower middle of an even count
    row = {**_row(MODEL_7B, "q4f16_1", "as shipped", 78.6), "pct_range": [77.5, 79.9]}
    s = summarize([row], None)
    assert s["pct_of_bw_limit_7b_q4_as_shipped"] == 78.6
    assert s["pct_of_bw_limit_7b_q4_as_shipped_range"] == [77.5, 79.9]
    assert "pct_of_bw_limit_1b_fp16_range" not in summarize([_row(MODEL_1B, "fp16", "after", 76.0)], None)
