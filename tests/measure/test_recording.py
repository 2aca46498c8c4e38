"""autosched.measure.recording: save/load of recordings, discovery, and the replay runner."""

import gzip
import json
import math

import pytest

from autosched.measure.recording import (FORMAT, Recording, RecordingError, RecordingWarning, ReplayRunner,
                                         find_recording, load_shipped, shipped_recordings)
from autosched.measure.result import Measurement, Status
from autosched.space import config_hash
from autosched.workloads import GemvQ4F16
from synthetic_recording import FILE_NAME, synthetic  # noqa: F401  (fixture)


def same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or a == b


def r4(x: float) -> float:
    return x if math.isnan(x) else round(x, 4)


@pytest.fixture(scope="module")
def loaded(synthetic):
    return synthetic.load()


def test_fixture_is_what_it_claims(synthetic):
    n = len(synthetic.configs)
    assert n > 30000
    assert len(synthetic.original.entries) == n
    assert abs(len(synthetic.wrong) - 0.03 * n) <= 1
    assert abs(len(synthetic.compile_error) - 0.01 * n) <= 1
    assert synthetic.path.name == FILE_NAME and synthetic.path.is_file()


def test_round_trip_every_config(synthetic, loaded):
    orig = synthetic.original
    assert len(loaded.entries) == len(orig.entries)
    assert set(loaded.entries) == set(orig.entries)
    for h, (cfg, m) in orig.entries.items():
        cfg2, m2 = loaded.entries[h]
        assert cfg2 == cfg
        assert m2.status is m.status
        assert same(m2.min_us, r4(m.min_us)), (cfg, m, m2)
        assert same(m2.median_us, r4(m.median_us))
        assert same(m2.spread_us, r4(m.spread_us))
        assert same(m2.max_abs_err, m.max_abs_err if math.isnan(m.max_abs_err) else round(m.max_abs_err, 6))
        assert (m2.registers, m2.smem_bytes, m2.spills) == (m.registers, m.smem_bytes, m.spills)
        assert m2.error == m.error


def test_round_trip_metadata(synthetic, loaded, h100):
    orig = synthetic.original
    assert loaded.device == h100
    assert loaded.device.key == h100.key
    assert loaded.device.cc == (9, 0)
    assert loaded.workload_key == "gemv_q4f16:N=4096,K=4096"
    assert loaded.template == "gemv_q4f16"
    assert loaded.knobs == orig.knobs
    assert loaded.protocol == orig.protocol
    assert loaded.versions == orig.versions
    assert loaded.date == "2025-06-01"
    assert loaded.space_size == len(synthetic.configs)
    assert loaded.path == str(synthetic.path)
    assert loaded.name == FILE_NAME


def test_loaded_statuses(synthetic, loaded):
    for cfg in synthetic.configs[:: 97]:
        h = config_hash(cfg)
        st = loaded.lookup(cfg).status
        if h in synthetic.wrong:
            assert st is Status.WRONG
        elif h in synthetic.compile_error:
            assert st is Status.COMPILE_ERROR
        else:
            assert st is Status.OK
    counts = {}
    for _, m in loaded.entries.values():
        counts[m.status] = counts.get(m.status, 0) + 1
    assert counts == {Status.OK: len(synthetic.configs) - len(synthetic.wrong) - len(synthetic.compile_error),
                      Status.WRONG: len(synthetic.wrong), Status.COMPILE_ERROR: len(synthetic.compile_error)}
    # half the compile errors keep NaN times through the file (stored as null)
    nan_ce = sum(math.isnan(m.median_us) for _, m in loaded.entries.values() if m.status is Status.COMPILE_ERROR)
    assert 0 < nan_ce < len(synthetic.compile_error)


def test_file_format(synthetic):
    with gzip.open(synthetic.path, "rt") as f:
        doc = json.load(f)
    assert doc["format"] == FORMAT
    assert len(doc["rows"]) == len(synthetic.configs)
    assert doc["device_key"] == synthetic.device.key
    assert len(doc["rows"][0]) == len(doc["knobs"]) + len(doc["columns"])
    # errors are kept by row index, only for rows that have one
    assert len(doc["errors"]) == len(synthetic.wrong) + len(synthetic.compile_error)


def test_lookup_ignores_key_order_and_misses(loaded, synthetic):
    cfg = synthetic.configs[123]
    assert loaded.lookup(dict(reversed(list(cfg.items())))) is loaded.lookup(cfg)
    assert loaded.lookup(dict(cfg, ts=3)) is None


def test_small_round_trip_error_text_and_nan(tmp_path, h100):
    rec = Recording("w:N=1,K=32", "fam", h100, ["a", "b"], date="d")
    rec.add({"a": 1, "b": "x"}, Measurement(Status.OK, 1.23456789, 2.00004999, 0.333333333, 1.23456789e-3,
                                            registers=10, smem_bytes=20, spills=1, runs=3))
    rec.add({"a": 2, "b": "y"}, Measurement(Status.COMPILE_ERROR, error="E" * 800))
    rec.add({"a": 3, "b": "y"}, Measurement(Status.TIMEOUT, error="hung"))
    rec.save(tmp_path / "deep" / "r.json.gz")
    back = Recording.load(tmp_path / "deep" / "r.json.gz")
    m = back.lookup({"a": 1, "b": "x"})
    assert (m.min_us, m.median_us, m.spread_us) == (1.2346, 2.0, 0.3333)
    assert m.max_abs_err == 0.001235
    assert (m.registers, m.smem_bytes, m.spills, m.runs) == (10, 20, 1, 3)
    assert m.error == ""
    ce = back.lookup({"a": 2, "b": "y"})
    assert ce.status is Status.COMPILE_ERROR and math.isnan(ce.median_us) and math.isnan(ce.min_us)
    assert ce.error == "E" * 500              # errors are truncated to 500 characters
    assert back.lookup({"a": 3, "b": "y"}).status is Status.TIMEOUT
    assert back.lookup({"a": 3, "b": "y"}).error == "hung"
    assert back.name == "r.json.gz"
    assert m.source == ce.source == "replay:r.json.gz"


def test_name_without_path(h100):
    assert Recording("w:N=1,K=32", "fam", h100, []).name == f"w:N=1,K=32@{h100.name}"


def test_non_recording_file_raises_value_error(tmp_path):
    p = tmp_path / "other.json.gz"
    with gzip.open(p, "wt") as f:
        json.dump({"format": "something-else/2", "rows": []}, f)
    with pytest.raises(ValueError, match="not an autosched recording"):
        Recording.load(p)
    p2 = tmp_path / "nofmt.json.gz"
    with gzip.open(p2, "wt") as f:
        json.dump({"benchmark": "gemv-q4f16"}, f)
    with pytest.raises(ValueError, match="not an autosched recording"):
        Recording.load(p2)
    p3 = tmp_path / "garbage.json.gz"
    with gzip.open(p3, "wt") as f:
        f.write("this is not json")
    with pytest.raises(ValueError):
        Recording.load(p3)


def test_non_gzip_file_raises_value_error(tmp_path):
    p = tmp_path / "plain.json.gz"
    p.write_text(json.dumps({"format": FORMAT}))
    with pytest.raises(ValueError):
        Recording.load(p)


def test_shipped_recordings_reads_env_folders(tmp_path, monkeypatch, synthetic):
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "notes.txt").write_text("x")
    monkeypatch.setenv("AUTOSCHED_RECORDINGS", f"{empty}:{synthetic.dir}:{tmp_path / 'missing'}")
    found = shipped_recordings()
    assert synthetic.path in found
    assert all(p.name.endswith(".json.gz") for p in found)
    rec = find_recording("gemv_q4f16:N=4096,K=4096", "gemv_q4f16")
    assert rec is not None and rec.name == FILE_NAME
    assert find_recording("gemv_q4f16:N=4096,K=8192", "gemv_q4f16") is None
    monkeypatch.setenv("AUTOSCHED_RECORDINGS", str(empty))
    assert synthetic.path not in shipped_recordings()


# -- replay runner ------------------------------------------------------------------------------

def test_replay_returns_recorded_measurement(synthetic, loaded):
    runner = ReplayRunner(loaded)
    assert runner.name == "replay" and runner.needs_binary is False
    assert runner.device_info == synthetic.device
    w, t, d = synthetic.workload, synthetic.template, synthetic.device
    for cfg in synthetic.configs[:: 1111]:
        m = runner.measure(t.render(w, cfg, d))
        want = loaded.lookup(cfg)
        assert m.status is want.status
        assert same(m.median_us, want.median_us) and same(m.min_us, want.min_us)
        assert same(m.median_us, r4(synthetic.original.lookup(cfg).median_us))
        assert m.source == f"replay:{FILE_NAME}"


def test_replay_not_recorded_config(synthetic, loaded, h100):
    partial = Recording(loaded.workload_key, loaded.template, loaded.device, loaded.knobs)
    for cfg in synthetic.configs[:10]:
        partial.add(cfg, loaded.lookup(cfg))
    runner = ReplayRunner(partial)
    w, t = synthetic.workload, synthetic.template
    assert runner.measure(t.render(w, synthetic.configs[3], h100)) is loaded.lookup(synthetic.configs[3])
    m = runner.measure(t.render(w, synthetic.configs[500], h100))
    assert m.status is Status.NOT_RECORDED
    assert not m.ok
    assert math.isnan(m.median_us)
    assert m.source.startswith("replay:")
    assert "not in the recording" in m.error


def test_replay_other_workload(synthetic, loaded, h100):
    other = GemvQ4F16(4096, 8192)
    t = synthetic.template
    cfg = t.default_config(other, h100)
    runner = ReplayRunner(loaded)
    m = runner.measure(t.render(other, cfg, h100))
    assert m.status is Status.NOT_RECORDED
    assert m.source.startswith("replay:")
    assert "gemv_q4f16:N=4096,K=8192" in m.error and "gemv_q4f16:N=4096,K=4096" in m.error
    # even a config that the recording has, measured for another workload, is not answered
    if loaded.lookup(cfg) is not None:
        assert m.status is Status.NOT_RECORDED


class _Binary:
    def __init__(self, ok, error=""):
        self.ok, self.error = ok, error


class _Future:
    def __init__(self, b):
        self.b = b

    def result(self):
        return self.b


def test_replay_failed_binary_is_compile_error(synthetic, loaded):
    runner = ReplayRunner(loaded)
    ok_cfg = next(c for c in synthetic.configs if loaded.lookup(c).ok)
    spec = synthetic.template.render(synthetic.workload, ok_cfg, synthetic.device)
    m = runner.measure(spec, _Future(_Binary(False, "ptxas: too many resources")))
    assert m.status is Status.COMPILE_ERROR
    assert m.error == "ptxas: too many resources"
    assert m.source.startswith("replay:")
    assert runner.measure(spec, _Binary(True)) is loaded.lookup(ok_cfg)
    assert runner.measure(spec, _Future(_Binary(True))) is loaded.lookup(ok_cfg)


def test_replay_measure_stream_keeps_tags(synthetic, loaded):
    w, t, d = synthetic.workload, synthetic.template, synthetic.device
    cfgs = synthetic.configs[:5]
    items = [(f"tag{i}", t.render(w, c, d), None) for i, c in enumerate(cfgs)]
    with ReplayRunner(loaded) as runner:
        out = list(runner.measure_stream(items))
    assert [tag for tag, _ in out] == [f"tag{i}" for i in range(5)]
    assert [m for _, m in out] == [loaded.lookup(c) for c in cfgs]


def test_best_is_the_fastest_passing_config_even_with_ties(h100):
    rec = Recording("gemv_q4f16:N=8,K=64", "gemv_q4f16", h100, ["a"])
    rec.add({"a": 1}, Measurement(Status.OK, 2.0, 2.0, 0.0, 0.0))
    rec.add({"a": 2}, Measurement(Status.OK, 2.0, 2.0, 0.0, 0.0))        # a tie must not compare dicts
    rec.add({"a": 3}, Measurement(Status.WRONG, 1.0, 1.0, 0.0, 0.0))     # faster, but wrong
    cfg, m = rec.best()
    assert cfg in ({"a": 1}, {"a": 2}) and m.median_us == 2.0
    assert Recording("x:N=1", "t", h100, ["a"]).best() is None


def test_recording_without_runs_column_reads_runs_zero(tmp_path, h100):
    """Recordings written before the runs column existed (8 columns) still load."""
    import gzip
    import json
    rec = Recording("w:N=1,K=32", "fam", h100, ["a"], date="d")
    rec.add({"a": 1}, Measurement(Status.OK, 1.0, 2.0, 0.5, 1e-3, registers=10, smem_bytes=20, spills=0, runs=100))
    rec.save(tmp_path / "r.json.gz")
    with gzip.open(tmp_path / "r.json.gz", "rt") as f:
        doc = json.load(f)
    doc["columns"] = doc["columns"][:8]
    doc["rows"] = [row[:-1] for row in doc["rows"]]
    with gzip.open(tmp_path / "old.json.gz", "wt") as f:
        json.dump(doc, f)
    m = Recording.load(tmp_path / "old.json.gz").lookup({"a": 1})
    assert (m.median_us, m.registers, m.runs) == (2.0, 10, 0)


# -- invalid recordings: refused naming the file and the row; skipped (with a warning) in a listing

def small_doc(h100) -> dict:
    """The document of a valid three-row recording (ok, wrong, compile error), to spoil."""
    rec = Recording("gemv_q4f16:N=8,K=64", "gemv_q4f16", h100, ["a", "b"], date="d")
    rec.add({"a": 1, "b": "x"}, Measurement(Status.OK, 1.0, 2.0, 0.5, 1e-3, registers=10, runs=3))
    rec.add({"a": 2, "b": "x"}, Measurement(Status.WRONG, 0.5, 0.6, 0.1, float("inf"), error="off"))
    rec.add({"a": 3, "b": "x"}, Measurement(Status.COMPILE_ERROR, error="nvrtc"))
    return {"format": FORMAT, "workload": rec.workload_key, "template": rec.template,
            "device": h100.to_json(), "knobs": rec.knobs, "columns": ["status", "min_us", "median_us",
            "spread_us", "max_abs_err", "registers", "smem_bytes", "spills", "runs"],
            "rows": [[1, "x", "ok", 1.0, 2.0, 0.5, 1e-3, 10, 0, 0, 3],
                     [2, "x", "wrong", 0.5, 0.6, 0.1, float("inf"), 0, 0, 0, 0],
                     [3, "x", "compile_error", None, None, None, None, 0, 0, 0, 0]],
            "errors": {"1": "off", "2": "nvrtc"}, "build": ""}


def write_doc(path, doc):
    with gzip.open(path, "wt") as f:
        json.dump(doc, f)
    return path


def test_small_doc_is_valid(tmp_path, h100):
    rec = Recording.load(write_doc(tmp_path / "r.json.gz", small_doc(h100)))
    assert len(rec.entries) == 3
    wrong = rec.lookup({"a": 2, "b": "x"})
    assert wrong.status is Status.WRONG and wrong.max_abs_err == float("inf") and wrong.median_us == 0.6
    assert math.isnan(rec.lookup({"a": 3, "b": "x"}).median_us)


def spoil(row: int, col: int, value):
    def f(doc):
        doc["rows"][row][col] = value
    return f


# (what to do to the document, what the message says); columns of a row: a, b, status, min, median,
# spread, max_abs_err, registers, smem_bytes, spills, runs
BAD_ROWS = {
    "short row": (lambda d: d["rows"][1].pop(), "row 1 has 10 values, not 2 knobs"),
    "long row": (lambda d: d["rows"][0].append(7), "row 0 has 12 values"),
    "knob count": (lambda d: d.update(knobs=["a", "b", "c"]), "row 0 has 11 values, not 3 knobs"),
    "row not a list": (lambda d: d["rows"].__setitem__(2, "x"), "row 2 has str values"),
    "ok NaN median": (spoil(0, 4, float("nan")), "row 0 has status ok but median_us nan"),
    "ok null min": (spoil(0, 3, None), "row 0 has status ok but min_us None"),
    "ok negative min": (spoil(0, 3, -1.0), "row 0 has status ok but min_us -1.0"),
    "ok zero median": (spoil(0, 4, 0), "row 0 has status ok but median_us 0"),
    "ok infinite median": (spoil(0, 4, float("inf")), "row 0 has status ok but median_us inf"),
    "ok negative spread": (spoil(0, 5, -0.1), "row 0 has spread_us -0.1"),
    "ok infinite error": (spoil(0, 6, float("inf")), "row 0 has max_abs_err inf"),
    "wrong negative time": (spoil(1, 3, -0.5), "row 1 has min_us -0.5"),
    "failed infinite time": (spoil(2, 4, float("inf")), "row 2 has median_us inf"),
    "time a string": (spoil(0, 4, "fast"), "row 0 has median_us 'fast', not a number"),
    "unknown status": (spoil(1, 2, "great"), "row 1 has the unknown status 'great'"),
    "status not a string": (spoil(1, 2, ["ok"]), "row 1 has the unknown status"),
    "negative registers": (spoil(0, 7, -4), "row 0 has registers -4"),
    "fractional spills": (spoil(0, 9, 0.5), "row 0 has spills 0.5"),
    "null knob": (spoil(2, 0, None), "row 2 gives knob a the value None"),
    "list knob": (spoil(2, 1, ["x"]), "row 2 gives knob b the value"),
    "error not text": (lambda d: d["errors"].update({"1": 5}), "row 1 has the error message 5"),
    "no rows": (lambda d: d.pop("rows"), "no rows"),
    "no device": (lambda d: d.pop("device"), "no device"),
    "bad device": (lambda d: d["device"].pop("cc"), "its device is not readable"),
    "knobs not names": (lambda d: d.update(knobs="ab"), "its knobs"),
    "duplicate knobs": (lambda d: d.update(knobs=["a", "a"]), "its knobs"),
    "missing column": (lambda d: d.update(columns=d["columns"][:3] + d["columns"][4:]),
                       "lack the columns spread_us"),
    "rows not a list": (lambda d: d.update(rows={"0": []}), "its rows"),
}


@pytest.mark.parametrize("case", list(BAD_ROWS))
def test_invalid_recording_is_a_value_error_naming_the_file_and_row(tmp_path, h100, case):
    spoil_it, says = BAD_ROWS[case]
    doc = small_doc(h100)
    spoil_it(doc)
    path = write_doc(tmp_path / "bad.json.gz", doc)
    with pytest.raises(RecordingError) as e:
        Recording.load(path)
    assert isinstance(e.value, ValueError)
    msg = str(e.value)
    assert msg.startswith(f"{path}: ") and says in msg, msg
    assert "\n" not in msg


def test_recording_that_is_not_json_names_the_file(tmp_path):
    p = tmp_path / "garbage.json.gz"
    with gzip.open(p, "wt") as f:
        f.write('{"format": "autosched-recording/1", "rows": [')     # cut short
    with pytest.raises(RecordingError, match="garbage.json.gz: not an autosched recording"):
        Recording.load(p)


@pytest.fixture
def bad_first(tmp_path, monkeypatch, synthetic, h100):
    """$AUTOSCHED_RECORDINGS: a folder whose recordings (sorted first) do not load, then the
    synthetic recording's."""
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "a-not-gzip.json.gz").write_text("hello")
    doc = small_doc(h100)
    doc["rows"][0][4] = -3.0
    write_doc(bad / "b-negative.json.gz", doc)
    monkeypatch.setenv("AUTOSCHED_RECORDINGS", f"{bad}:{synthetic.dir}")
    return bad


def test_find_recording_skips_a_bad_recording_with_a_warning(bad_first, synthetic):
    with pytest.warns(RecordingWarning) as got:
        rec = find_recording("gemv_q4f16:N=4096,K=4096", "gemv_q4f16")
    assert rec is not None and rec.name == FILE_NAME
    text = [str(w.message) for w in got]
    assert any("a-not-gzip.json.gz" in t for t in text)
    # another shape's recording, by its header: its rows are never read, so their fault is not met
    assert not any("b-negative.json.gz" in t for t in text)


def test_load_shipped_skips_bad_recordings_and_lists_the_rest(bad_first, synthetic):
    with pytest.warns(RecordingWarning, match="skipped a recording"):
        got = load_shipped()
    paths = [p for p, _ in got]
    assert synthetic.path in paths
    assert not any(p.parent == bad_first for p in paths)
    assert len(got) == len(shipped_recordings()) - 2
    assert all(isinstance(r, Recording) and r.path == str(p) for p, r in got)


def test_a_bad_recording_does_not_block_the_recordings_of_a_workload(bad_first, synthetic):
    from autosched import api
    with pytest.warns(RecordingWarning):
        recs = api.recordings_for(synthetic.workload)
    assert [r.name for r in recs] == [FILE_NAME]
