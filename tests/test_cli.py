"""autosched.cli in-process (main([...]) with output captured), on this GPU-less machine: tune and
export replay the synthetic recording, bad input exits 2 with a message, report rewrites a README."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

import autosched.device
from autosched.cli import main
from autosched.database import Database
from autosched.measure.recording import Recording, ReplayRunner
from autosched.space import config_hash
from synthetic_recording import synthetic  # noqa: F401  (fixture)

ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


@pytest.fixture
def cli(monkeypatch, capsys, synthetic):
    """Run the CLI in-process; returns (rc, stdout, stderr) with whitespace runs collapsed in
    `flat` forms too, since rich wraps long lines."""
    monkeypatch.setenv("AUTOSCHED_RECORDINGS", str(synthetic.dir))
    monkeypatch.setenv("COLUMNS", "250")
    monkeypatch.setattr(autosched.device, "gpu_count", lambda: 0)   # even where a GPU exists

    def run(*argv):
        capsys.readouterr()
        rc = main(list(argv))
        out, err = capsys.readouterr()
        return rc, ANSI.sub("", out), ANSI.sub("", err)
    return run


def flat(s: str) -> str:
    return " ".join(s.split())


@pytest.fixture(scope="module")
def loaded(synthetic):
    return synthetic.load()


def tuned_row(out: str) -> list[str]:
    """Cells of the result table's "tuned" row."""
    for line in out.splitlines():
        cells = [c.strip() for c in re.split(r"[│┃|]", line)]
        cells = [c for c in cells if c]
        if cells and cells[0] == "tuned":
            return cells
    raise AssertionError(f"no 'tuned' row in:\n{out}")


# -- tune ---------------------------------------------------------------------------------------

def test_tune_replay_random(cli, synthetic, loaded, tmp_path):
    db = tmp_path / "db"
    rc, out, err = cli("tune", "gemv-q4f16", "--shape", "4096x4096", "--runner", "replay", "--db", str(db),
                       "--trials", "200", "--strategy", "random")
    assert rc == 0, err
    assert "REPLAY" in out
    assert "x.json.gz" in out
    space = synthetic.template.space(synthetic.workload, synthetic.device)
    f = flat(out)
    assert f"{space.raw_size():,} raw points" in f
    assert f"{len(synthetic.configs):,} after pruning" in f
    assert "200 trials (200 measured now, 0 resumed" in f
    # the best shown is the best ok config among the 200 the run measured (all in the database)
    with Database(db) as d:
        rows = d.measured(synthetic.workload.key, synthetic.device.key, "gemv_q4f16")
        best = d.best(synthetic.workload.key, synthetic.device.key, "gemv_q4f16")
    assert len(rows) == 200
    measured = [r.config for r in rows.values()]
    want_cfg, want_m = synthetic.best_ok(loaded, measured)
    assert best.config == want_cfg
    assert best.measurement.median_us == want_m.median_us
    # measured in random order, not the first 200 of the enumeration
    assert set(rows) != {config_hash(c) for c in synthetic.configs[:200]}
    row = tuned_row(out)
    assert row[0] == "tuned"
    assert row[1] == f"{want_m.median_us:.2f}"
    assert row[2] == f"{want_m.min_us:.2f}"
    assert f"best {want_m.median_us:.2f} us" in out          # the progress bar's last word
    # the default config is reported beside the tuned one, from the same recording
    default_cfg = synthetic.template.default_config(synthetic.workload, synthetic.device)
    dm = loaded.lookup(default_cfg)
    if dm.ok:
        assert f"{dm.median_us:.2f}" in out


def test_tune_auto_runner_without_gpu_replays(cli, tmp_path):
    rc, out, err = cli("tune", "gemv-q4f16", "--shape", "4096x4096", "--runner", "auto", "--db",
                       str(tmp_path / "db"), "--trials", "20", "--strategy", "exhaustive")
    assert rc == 0, err
    assert "REPLAY" in out
    assert "20 trials (20 measured now" in flat(out)
    assert "replayed from x.json.gz" in flat(out)


@pytest.mark.parametrize("runner", ["auto", "replay"])
def test_tune_unrecorded_shape(cli, tmp_path, runner):
    rc, out, err = cli("tune", "gemv-q4f16", "--shape", "4096x8192", "--runner", runner, "--db",
                       str(tmp_path / "db"), "--trials", "5")
    assert rc == 2
    e = flat(err)
    assert "error" in e
    assert "N=4096,K=8192" in e
    assert "4096x4096," in e and "12288x4096" in e   # lists the operator's recorded shapes
    assert "REPLAY" not in out


@pytest.mark.parametrize("shape, words", [
    ("4096x100", ["K must be a positive multiple of 32", "K=100"]),
    ("abc", ["shape must be NxK", "'abc'"]),
    ("4096x4096x2", ["shape must be NxK"]),
    ("0x4096", ["N must be >= 1"]),
])
def test_tune_bad_shape(cli, tmp_path, shape, words):
    rc, out, err = cli("tune", "gemv-q4f16", "--shape", shape, "--db", str(tmp_path / "db"))
    assert rc == 2
    e = flat(err)
    assert e.startswith("error:")
    for w in words:
        assert w in e
    assert not (tmp_path / "db").exists()       # refused before anything was opened


def test_unknown_op_is_argparse_error(cli):
    with pytest.raises(SystemExit) as e:
        cli("tune", "gemm-fp8", "--shape", "4096x4096")
    assert e.value.code == 2


# -- export -------------------------------------------------------------------------------------

def test_export_with_config(cli, synthetic, tmp_path):
    cfg = synthetic.configs[777]
    out_path = tmp_path / "k.cu"
    rc, out, err = cli("export", "gemv-q4f16", "--shape", "4096x4096", "--config", json.dumps(cfg),
                       "-o", str(out_path))
    assert rc == 0, err
    text = out_path.read_text()
    spec = synthetic.template.render(synthetic.workload, cfg, synthetic.device)
    assert spec.name_expression in text
    assert f"template __global__ void {spec.name_expression}(" in text
    assert 'extern "C"' in text
    assert f"autosched_gemv_q4f16_{config_hash(cfg)}(" in text
    assert json.dumps(cfg, sort_keys=True) in text
    assert f"grid {spec.grid}, block {spec.block}" in text
    assert "sm_90" in text                                  # target from the recording's DeviceInfo
    assert "wrote" in out and "k.cu" in flat(out)


def test_export_invalid_config(cli, synthetic, tmp_path):
    cfg = dict(synthetic.configs[0], ts=3)
    out_path = tmp_path / "k.cu"
    rc, out, err = cli("export", "gemv-q4f16", "--shape", "4096x4096", "--config", json.dumps(cfg),
                       "-o", str(out_path))
    assert rc == 2
    assert "ts=3" in flat(err)
    assert not out_path.exists()


def test_export_config_not_json(cli, tmp_path):
    rc, out, err = cli("export", "gemv-q4f16", "--shape", "4096x4096", "--config", "{ts: 3",
                       "-o", str(tmp_path / "k.cu"))
    assert rc == 2
    assert "--config is not valid JSON" in flat(err)


def test_export_best_of_recording_when_database_empty(cli, synthetic, loaded, tmp_path):
    out_path = tmp_path / "k.cu"
    rc, out, err = cli("export", "gemv-q4f16", "--shape", "4096x4096", "--db", str(tmp_path / "db"),
                       "-o", str(out_path))
    assert rc == 0, err
    best_cfg, _ = synthetic.best_ok(loaded)
    text = out_path.read_text()
    assert "best of recording x.json.gz" in text
    assert json.dumps(best_cfg, sort_keys=True) in text


def test_export_best_of_database(cli, synthetic, loaded, tmp_path):
    db = tmp_path / "db"
    ok_cfgs = [c for c in synthetic.configs[:400] if loaded.lookup(c).ok][:5]
    wrong_cfg = next(c for c in synthetic.configs if config_hash(c) in synthetic.wrong)
    with Database(db) as d:
        for c in ok_cfgs + [wrong_cfg]:
            d.add(synthetic.workload.key, synthetic.device.key, "gemv_q4f16", c, loaded.lookup(c))
        best = d.best(synthetic.workload.key, synthetic.device.key, "gemv_q4f16")
    assert best.config in ok_cfgs
    out_path = tmp_path / "k.cu"
    rc, out, err = cli("export", "gemv-q4f16", "--shape", "4096x4096", "--db", str(db), "-o", str(out_path))
    assert rc == 0, err
    text = out_path.read_text()
    assert f"database best on {synthetic.device.key}" in text
    assert json.dumps(best.config, sort_keys=True) in text
    assert json.dumps(wrong_cfg, sort_keys=True) not in text


def test_export_nothing_tuned_unrecorded_shape(cli, tmp_path):
    rc, out, err = cli("export", "gemv-q4f16", "--shape", "4096x8192", "--db", str(tmp_path / "db"),
                       "-o", str(tmp_path / "k.cu"))
    assert rc == 2
    assert "nothing tuned for gemv_q4f16:N=4096,K=8192" in flat(err)


# -- devices ------------------------------------------------------------------------------------

def test_devices_lists_recording(cli, synthetic):
    rc, out, err = cli("devices")
    assert rc == 0, err
    f = flat(out)
    assert "no CUDA GPU found" in f
    assert "x.json.gz" in f
    assert "gemv_q4f16:N=4096,K=4096" in f
    assert "NVIDIA H100 80GB HBM3" in f
    assert f"{len(synthetic.configs):,}" in f
    assert "2025-06-01" in f


# -- report -------------------------------------------------------------------------------------

def _row(N, K, tuned, **kw):
    floor = N * K / 2 / 3.0e6
    r = {"N": N, "K": K, "bytes": N * K // 2 + N * K // 16, "floor_us": floor, "tuned_us": tuned,
         "default_us": tuned * 1.5, "time_over_floor": tuned / floor, "speedup_vs_default": 1.5,
         "cublas_fp16_us": tuned * 3.2, "tinygemm_us": tuned * 1.8, "graph_tuned_us": tuned * 0.9,
         "graph_default_us": tuned * 1.4, "graph_cublas_fp16_us": tuned * 3.0, "tune_s": 42.4, "trials": 600}
    r.update(kw)
    return r


def _results(tmp_path) -> Path:
    res = tmp_path / "results"
    res.mkdir()
    new = {"benchmark": "gemv-q4f16", "device": "NVIDIA H100 80GB HBM3", "date": "2025-06-02",
           "commit": "0123456789abcdef0123", "rows": [_row(4096, 4096, 8.25), _row(12288, 4096, 19.5, tinygemm_us=None)],
           "summary": {"max_time_over_floor": 1.087, "geomean_speedup_vs_default": 1.5}}
    old = dict(new, date="2025-05-01", commit="fedcba9876543210", rows=[_row(1024, 1024, 99.0)])
    (res / "gemv-q4f16-H100-2025-06-02.json").write_text(json.dumps(new))
    (res / "gemv-q4f16-H100-2025-05-01.json").write_text(json.dumps(old))
    (res / "gemv-q4f16-broken.json").write_text("{not json")
    (res / "gemv-q4f16-other.json").write_text(json.dumps(dict(new, benchmark="stream-read", date="2099-01-01")))
    return res


HEAD = "# Project\n\nSome text before.\n\n## Results\n\n"
TAIL = "\n\nText after the block.\n<!-- results:other -->\nkeep\n<!-- /results:other -->\n"


def test_report_updates_readme_between_markers(cli, tmp_path):
    res = _results(tmp_path)
    plots = tmp_path / "plots"
    readme = tmp_path / "README_COPY.md"
    readme.write_text(HEAD + "<!-- results:gemv-q4f16 -->\nOLD TABLE\n<!-- /results:gemv-q4f16 -->" + TAIL)
    rc, out, err = cli("report", "--results", str(res), "--plots", str(plots), "--readme", str(readme))
    assert rc == 0, err
    text = readme.read_text()
    assert text.startswith(HEAD + "<!-- results:gemv-q4f16 -->\n")
    assert text.endswith("<!-- /results:gemv-q4f16 -->" + TAIL)
    block = text[len(HEAD + "<!-- results:gemv-q4f16 -->\n"): -len("<!-- /results:gemv-q4f16 -->" + TAIL)]
    assert "OLD TABLE" not in text
    assert block.startswith("| N x K | MB | floor (us) | tuned (us) |")
    assert "| 4096 x 4096 |" in block and "| 12288 x 4096 |" in block
    assert "| 8.25 |" in block and "| 19.50 |" in block
    # the two newest runs, newest first; the older lacks the newer's shapes and says so
    assert block.index("| 12288 x 4096 |") < block.index("| 1024 x 1024 |")
    assert "no row for 4096x4096, 12288x4096 (the run was cut short)" in block
    assert "Plot (from `gemv-q4f16-H100-2025-06-02.json`)" in block   # plotted: the newest complete
    assert "2025-06-02" in block and "`0123456789`" in block
    assert "**1.087x**" in block and "**1.50x**" in block
    assert "| – |" in block                            # a missing measurement shows as a dash
    assert "42, 600" in block
    assert "![q4f16_1 GEMV bandwidth](" in block and "gemv-q4f16-bandwidth.png" in block
    png = plots / "gemv-q4f16-bandwidth.png"
    assert png.is_file() and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "| 4096 x 4096 |" in out                    # the table is printed too
    assert "README_COPY.md" in flat(out)

    # running again replaces the block instead of nesting a second one
    rc, _, err = cli("report", "--results", str(res), "--plots", str(plots), "--readme", str(readme))
    assert rc == 0, err
    assert readme.read_text() == text


def test_report_without_readme_writes_plot(cli, tmp_path):
    res = _results(tmp_path)
    rc, out, err = cli("report", "--results", str(res), "--plots", str(tmp_path / "p"))
    assert rc == 0, err
    assert (tmp_path / "p" / "gemv-q4f16-bandwidth.png").is_file()


def test_report_readme_without_markers(cli, tmp_path):
    res = _results(tmp_path)
    readme = tmp_path / "README_COPY.md"
    original = "# Project\n\nno markers here\n<!-- results:gemv-q4f16 -->\nonly a start marker\n"
    readme.write_text(original)
    rc, out, err = cli("report", "--results", str(res), "--plots", str(tmp_path / "plots"),
                       "--readme", str(readme))
    assert rc == 2
    assert "<!-- results:gemv-q4f16 -->" in flat(err) and "<!-- /results:gemv-q4f16 -->" in flat(err)
    assert readme.read_text() == original


# -- entry points -------------------------------------------------------------------------------

def _autosched_script() -> str:
    script = Path(sys.executable).parent / "autosched"
    if not script.exists():
        import shutil
        found = shutil.which("autosched")
        assert found, "the autosched console script is not installed"
        return found
    return str(script)


@pytest.mark.parametrize("argv", [
    [sys.executable, "-m", "autosched", "--help"],
    ["<script>", "tune", "--help"],
    [sys.executable, "-m", "autosched", "export", "--help"],
])
def test_help_via_subprocess(argv):
    argv = [(_autosched_script() if a == "<script>" else a) for a in argv]
    p = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert "usage: autosched" in p.stdout
    if "tune" in argv:
        for opt in ("--shape", "--runner", "--trials", "--strategy", "--db"):
            assert opt in p.stdout
    elif "export" in argv:
        assert "--config" in p.stdout
    else:
        for cmd in ("devices", "tune", "record", "bench", "report", "export"):
            assert cmd in p.stdout


def test_no_command_is_usage_error():
    p = subprocess.run([sys.executable, "-m", "autosched"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 2
    assert "usage" in p.stderr


class _GpuStandIn(ReplayRunner):
    """The replay runner standing in for the GPU runner: it answers from the recording but, like
    the GPU runner, says it measures the local build."""

    def build_id(self, template):
        from autosched.identity import build_id
        return build_id(template)


def test_record_writes_a_recording_of_what_it_measured(cli, synthetic, loaded, tmp_path, monkeypatch):
    """`record` end to end with the GPU runner stood in for by a replay of the synthetic data: it
    measures (here: looks up) configs for --time, resumes, and saves a recording that loads back."""
    import autosched.measure.gpu as gpu

    monkeypatch.setattr(gpu, "GpuRunner", lambda *a, **k: _GpuStandIn(loaded))
    out = tmp_path / "rec.json.gz"
    db = tmp_path / "db"
    rc, text, err = cli("record", "gemv-q4f16", "--shape", "4096x4096", "--db", str(db), "--out", str(out),
                        "--strategy", "random", "--time", "0.5")
    assert rc == 0, err
    rec = Recording.load(out)
    assert rec.workload_key == synthetic.workload.key and rec.device == synthetic.device
    assert 0 < len(rec.entries) <= len(synthetic.configs)
    with Database(db) as d:
        assert len(d.measured(synthetic.workload.key, synthetic.device.key, "gemv_q4f16")) == len(rec.entries)
    for cfg, m in list(rec.entries.values())[:50]:
        assert m.status == loaded.lookup(cfg).status
        assert m.median_us == pytest.approx(loaded.lookup(cfg).median_us, abs=1e-4, nan_ok=True)
    assert f"recorded {len(rec.entries):,} of" in flat(text)


def test_generate_and_bench_decode_need_a_gpu_and_say_so(cli):
    rc, out, err = cli("generate", "--model", "random:stories15M")
    assert rc == 2 and "CUDA GPU" in flat(err)
    rc, out, err = cli("bench", "decode")
    assert rc == 2 and "there is none here" in flat(err)


def test_generate_refuses_bad_sampling_and_prompt_arguments(cli, monkeypatch):
    monkeypatch.setattr(autosched.device, "gpu_count", lambda: 1)    # reach the argument checks
    rc, out, err = cli("generate", "--model", "random:stories15M", "--prompt-tokens", "1,x")
    assert rc == 2 and "comma-separated token ids" in flat(err)
    rc, out, err = cli("generate", "--model", "random:stories15M", "--prompt-tokens", "1", "--top-p", "0")
    assert rc == 2 and "--top-p" in flat(err)
    rc, out, err = cli("generate", "--model", "random:stories15M")
    assert rc == 2 and "no tokenizer found" in flat(err)


def test_report_renders_the_committed_decode_and_sgemm_results(cli, tmp_path):
    """The README's decode and SGEMM blocks come from bench/results: every number in them is read
    from the newest results file, and the plots are written."""
    import shutil
    repo = Path(__file__).resolve().parents[1] / "bench" / "results"
    res = _results(tmp_path)
    from autosched.results_files import all_results
    # the newest run of each benchmark, as the report picks it (sgemm-buffers-* is another benchmark)
    decode, sgemm = (Path(all_results(repo, b)[0]["_path"]) for b in ("decode", "sgemm"))
    shutil.copy(decode, res)
    shutil.copy(sgemm, res)
    readme = tmp_path / "README_COPY.md"
    readme.write_text(HEAD + "<!-- results:gemv-q4f16 -->\n<!-- /results:gemv-q4f16 -->\n"
                      "<!-- results:sgemm -->\nOLD\n<!-- /results:sgemm -->\n"
                      "<!-- results:decode -->\nOLD\n<!-- /results:decode -->" + TAIL)
    rc, out, err = cli("report", "--results", str(res), "--plots", str(tmp_path / "plots"), "--readme", str(readme))
    assert rc == 0, err
    text = readme.read_text()
    assert "OLD" not in text and text.endswith(TAIL)
    d = json.loads(decode.read_text())
    q4 = next(r for r in d["rows"] if r["model"] == "llama2-7b" and r["format"] == "q4f16_1")
    assert f"| llama2-7b | q4f16_1 | {q4['tokens_per_s']:.1f} |" in text
    s = json.loads(sgemm.read_text())
    big = next(r for r in s["rows"] if r["M"] == r["N"] == r["K"] == 4096)
    assert f"| 4096 x 4096 x 4096 | {big['tuned_us']:.2f} |" in text
    assert (tmp_path / "plots" / "decode-quality-speed.png").is_file()
    assert (tmp_path / "plots" / "decode-attention.png").is_file()


def test_record_resumes_from_an_earlier_recording(cli, synthetic, loaded, tmp_path, monkeypatch):
    """A record run on a fresh database, given an earlier partial recording, starts from its
    measurements (they are not taken again) and refuses one of another shape."""
    import autosched.measure.gpu as gpu

    monkeypatch.setattr(gpu, "GpuRunner", lambda *a, **k: _GpuStandIn(loaded))
    first = tmp_path / "first.json.gz"
    rc, _, err = cli("record", "gemv-q4f16", "--shape", "4096x4096", "--db", str(tmp_path / "db1"),
                     "--out", str(first), "--strategy", "random", "--time", "0.3")
    assert rc == 0, err
    n_first = len(Recording.load(first).entries)
    second = tmp_path / "second.json.gz"
    rc, text, err = cli("record", "gemv-q4f16", "--shape", "4096x4096", "--db", str(tmp_path / "db2"),
                        "--out", str(second), "--resume-from", str(first), "--time", "0.3")
    assert rc == 0, err
    assert f"resumed from {first}: {n_first:,} configs" in flat(text)
    rec2 = Recording.load(second)
    assert set(Recording.load(first).entries) <= set(rec2.entries)
    with Database(tmp_path / "db2") as d:
        rows = d.measured(synthetic.workload.key, synthetic.device.key, "gemv_q4f16")
        imported = [r for r in rows.values() if r.measurement.source.startswith("gpu (recording")]
        assert len(imported) == n_first
    rc, _, err = cli("record", "gemv-q4f16", "--shape", "4096x2048", "--db", str(tmp_path / "db3"),
                     "--resume-from", str(first))
    assert rc == 2 and "not gemv_q4f16" in flat(err)


# -- output that survives a pipe ------------------------------------------------------------------

def test_piped_output_is_never_cut_at_80_columns(synthetic, tmp_path):
    """`devices` and a tune whose output goes to a pipe (no terminal, no COLUMNS): long names come
    out whole, and the tune prints progress lines (a bar cannot redraw in a pipe)."""
    import os
    import shutil
    long_name = "gemv_q4f16-4096x4096-" + "a-very-long-recording-name-" * 3 + "NVIDIA_H100.json.gz"
    shutil.copy(synthetic.path, tmp_path / long_name)
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    env["AUTOSCHED_RECORDINGS"] = str(tmp_path)
    env["AUTOSCHED_HOME"] = str(tmp_path / "home")
    out = subprocess.run([sys.executable, "-m", "autosched.cli", "devices"], capture_output=True, text=True,
                         env=env, check=True).stdout
    assert long_name in out
    out = subprocess.run([sys.executable, "-m", "autosched.cli", "tune", "gemv-q4f16", "--shape", "4096x4096",
                          "--runner", "replay", "--strategy", "random", "--trials", "100"],
                         capture_output=True, text=True, env=env, check=True).stdout
    progress = [line for line in out.splitlines() if line.startswith("tune 4096x4096: ")]
    assert len(progress) >= 10 and progress[-1].startswith("tune 4096x4096: 100/100 best ")


def test_report_renders_what_there_is_and_refuses_an_empty_folder(cli, tmp_path):
    res = tmp_path / "res"
    res.mkdir()
    rc, out, err = cli("report", "--results", str(res), "--plots", str(tmp_path / "plots"))
    assert rc == 2 and f"no results files (*.json) under {res}" in flat(err)
    committed = Path(__file__).resolve().parents[1] / "bench" / "results"
    sgemm = sorted(committed.glob("sgemm-NVIDIA*.json"))[-1]
    (res / sgemm.name).write_text(sgemm.read_text())          # a folder without GEMV results
    readme = tmp_path / "README.md"
    readme.write_text("<!-- results:sgemm -->\nold\n<!-- /results:sgemm -->\n")
    rc, out, err = cli("report", "--results", str(res), "--plots", str(tmp_path / "plots"), "--readme", str(readme))
    assert rc == 0, err
    assert "old" not in readme.read_text() and "4096" in readme.read_text()


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf", "soon"])
def test_time_must_be_positive_seconds(cli, value, tmp_path):
    with pytest.raises(SystemExit) as e:
        cli("tune", "gemv-q4f16", "--shape", "4096x4096", "--db", str(tmp_path / "db"), "--time", value)
    assert e.value.code == 2
    assert not (tmp_path / "db").exists()


@pytest.mark.parametrize("config", ["null", "5", '"str"', "[1, 2]"])
def test_export_config_must_be_an_object(cli, tmp_path, config):
    out_path = tmp_path / "k.cu"
    rc, out, err = cli("export", "gemv-q4f16", "--shape", "4096x4096", "--config", config, "-o", str(out_path))
    assert rc == 2
    assert "--config must be a JSON object of knob values" in flat(err)
    assert not out_path.exists()


@pytest.mark.parametrize("argv", [["--shape=--"], ["--shape", ""], ["--shape=   "]])
def test_a_shape_with_no_value_names_the_syntax(cli, tmp_path, argv):
    rc, out, err = cli("tune", "gemv-q4f16", *argv, "--db", str(tmp_path / "db"))
    assert rc == 2 and "--shape needs a value: NxK (e.g. 12288x4096)" in flat(err)
    assert not (tmp_path / "db").exists()


def test_a_bad_recording_is_skipped_with_a_warning_not_an_error(cli, synthetic, tmp_path, monkeypatch):
    """One unreadable file among the recordings does not block `devices` or a tune: it is named in a
    one-line warning and the rest serve."""
    import shutil
    rec_dir = tmp_path / "recs"
    rec_dir.mkdir()
    shutil.copy(synthetic.path, rec_dir / synthetic.path.name)
    (rec_dir / "aaa-broken.json.gz").write_bytes(b"not a recording")
    monkeypatch.setenv("AUTOSCHED_RECORDINGS", str(rec_dir))
    rc, out, err = cli("devices")
    assert rc == 0, err
    assert "warning:" in err and "aaa-broken.json.gz" in flat(err) and synthetic.path.name in flat(out)
    rc, out, err = cli("tune", "gemv-q4f16", "--shape", "4096x4096", "--db", str(tmp_path / "db"), "--trials", "5",
                       "--strategy", "random")
    assert rc == 0, err
    assert "aaa-broken.json.gz" in flat(err)


def test_report_piped_keeps_markdown_tables_whole(tmp_path):
    """`autosched report > file`: the printed markdown table rows are whole lines, not wrapped at 80
    columns (which broke every table when redirected)."""
    import os
    committed = Path(__file__).resolve().parents[1] / "bench" / "results"
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    out = subprocess.run([sys.executable, "-m", "autosched.cli", "report", "--results", str(committed),
                          "--plots", str(tmp_path / "plots")], capture_output=True, text=True, env=env,
                         check=True).stdout
    rows = [line for line in out.splitlines() if line.startswith("| ")]
    assert len(rows) > 8 and all(line.rstrip().endswith("|") for line in rows)
    assert max(len(line) for line in rows) > 80


# -- family options (issue 15) ------------------------------------------------------------------

def _hgemm_mma_only(monkeypatch):
    """The hgemm family with its mma.sync template alone, which refuses the blocked layout."""
    import dataclasses

    from autosched import registry
    h = registry.FAMILIES["hgemm"]
    monkeypatch.setitem(registry.FAMILIES, "hgemm",
                        dataclasses.replace(h, templates=tuple(t for t in h.templates if t.family == "hgemm_mma")))


@pytest.mark.parametrize("cmd", ["tune", "record", "export"])
@pytest.mark.parametrize("argv, words", [
    # no template serving bb: the reason, and nothing written
    (["--shape", "4096x4096x4096_bb"], ["no template of hgemm accepts hgemm:M=4096,N=4096,K=4096,b_col=0,blocked=1",
                                        "hgemm_mma: its kernel reads row layouts, not the blocked 16x16 tiles (bb"]),
    (["--shape", "4096x4096x4096", "--layout", "col"], ["hgemm: --layout must be one of nn, nt, tn, tt, bb, got 'col'"]),
    (["--shape", "4096x4096x4096_bt", "--layout", "tn"], ["says layout nt but the layout option says tn"]),
])
def test_hgemm_layouts_no_template_serves_exit_2_with_the_reason(cli, tmp_path, monkeypatch, cmd, argv, words):
    _hgemm_mma_only(monkeypatch)
    extra = ["-o", str(tmp_path / "k.cu")] if cmd == "export" else ["--db", str(tmp_path / "db")]
    rc, out, err = cli(cmd, "hgemm", *argv, *extra)
    assert rc == 2
    e = flat(err)
    assert e.startswith("error:") and e.count("error:") == 1
    for w in words:
        assert w in e
    assert not (tmp_path / "db").exists() and not (tmp_path / "k.cu").exists()


@pytest.mark.parametrize("argv, key", [
    (["--layout", "tn"], "hgemm:M=4000,N=4096,K=4096,b_col=0,a_col=1"),
    (["--dtype", "bf16"], "hgemm:M=4000,N=4096,K=4096,b_col=0,bf16=1"),
    (["--layout", "bb", "--dtype", "bf16"], "hgemm:M=4000,N=4096,K=4096,b_col=0,blocked=1,bf16=1"),
])
def test_hgemm_every_layout_and_dtype_reaches_the_runner(cli, tmp_path, argv, key):
    """The templates serve them all now (mma.sync the row layouts, wmma all of them): the replay
    runner is the one that refuses, for want of a recording (none ships at M=4000), and names the key
    it looked for."""
    rc, out, err = cli("tune", "hgemm", "--shape", "4000x4096x4096", *argv, "--runner", "replay",
                       "--db", str(tmp_path / "db"))
    assert rc == 2 and f"no recording for {key}:" in flat(err) and "no template" not in flat(err)


def test_an_option_the_family_does_not_take_is_named(cli, tmp_path):
    rc, out, err = cli("tune", "sgemm", "--shape", "64x64x64", "--dtype", "bf16", "--db", str(tmp_path / "db"))
    assert rc == 2 and "error: sgemm takes no option --dtype; --dtype is for hgemm" in flat(err)


def test_layout_option_names_the_same_workload_as_the_suffix(cli, tmp_path):
    """--layout nt is _bt: the replay runner's refusal names the key it looked for."""
    rc, out, err = cli("tune", "hgemm", "--shape", "64x14336x4096", "--layout", "nt", "--runner", "replay",
                       "--db", str(tmp_path / "db"))
    assert rc == 2 and "hgemm:M=64,N=14336,K=4096,b_col=1" in flat(err)


def test_help_names_the_options_and_their_family():
    out = subprocess.run([sys.executable, "-m", "autosched.cli", "tune", "--help"], capture_output=True, text=True,
                         check=True, env={**__import__("os").environ, "COLUMNS": "200"}).stdout
    assert "--layout nn|nt|tn|tt|bb" in out and "--dtype fp16|bf16" in out
    assert "hgemm only: how A and B are stored" in flat(out)
