"""What `tune-model` shows for a model no recording holds a shape of (a replay): a line as each
shape is settled, not silence until the end, and no budget for a shape that spent none."""

import re

import autosched.device
import autosched.model_tuning
import autosched.selection
from autosched.cli import main
from synthetic_recording import synthetic  # noqa: F401  (fixture)

ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def test_tune_model_of_unrecorded_shapes_says_so_shape_by_shape(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("COLUMNS", "250")
    monkeypatch.delenv("AUTOSCHED_RECORDINGS", raising=False)
    monkeypatch.setattr(autosched.device, "gpu_count", lambda: 0)
    shown_before = []              # the output so far, each time a shape's served config is looked up
    rank, out = autosched.selection.rank, []

    def ranking(*a, **k):
        out.append(ANSI.sub("", capsys.readouterr().out))
        shown_before.append("".join(out))
        return rank(*a, **k)
    monkeypatch.setattr(autosched.selection, "rank", ranking)
    monkeypatch.setattr(autosched.model_tuning, "rank", ranking)     # it imported the name at its top
    rc = main(["tune-model", "random:llama3.2-1b", "--runner", "replay", "--budget", "0.05",
               "--db", str(tmp_path / "db")])
    out.append(ANSI.sub("", capsys.readouterr().out))
    text = "".join(out)
    assert rc == 0 and len(shown_before) == 5
    # before the first shape's work: what the run will do; before each later one: the shape before it
    assert "tuning 5 shape(s)" in shown_before[0]
    for i in range(1, 5):
        assert shown_before[i].count("no recording of this shape") == i
    table = text[text.index("tune-model random:llama3.2-1b in"):]
    rows = [[c.strip() for c in line.split("│")[1:-1]] for line in table.splitlines() if "not recorded" in line]
    assert len(rows) == 5 and all(r[3] == "" for r in rows)          # the budget (s) column: empty


def test_tune_counts_its_progress_lines_and_its_result_on_one_clock(tmp_path, monkeypatch, capsys, synthetic):  # noqa: F811
    import time

    import autosched.cli
    monkeypatch.setenv("AUTOSCHED_RECORDINGS", str(synthetic.dir))
    monkeypatch.setattr(autosched.device, "gpu_count", lambda: 0)
    show = autosched.cli._print_plan

    def slow_plan(plan):             # a slow start (opening the runner, sizing the space) before the search
        time.sleep(2.0)
        show(plan)
    monkeypatch.setattr(autosched.cli, "_print_plan", slow_plan)
    assert main(["tune", "gemv-q4f16", "--shape", "4096x4096", "--runner", "replay", "--strategy", "random",
                 "--trials", "20", "--db", str(tmp_path / "db")]) == 0
    out = ANSI.sub("", capsys.readouterr().out)
    progress = [float(s) for s in re.findall(r"tune 4096x4096: \d+/\d+ .*?\((\d+) s\)", out)]
    total = float(re.search(r"resumed from the database\) in ([\d.]+) s", out).group(1))
    assert progress and max(progress) <= total + 0.5
