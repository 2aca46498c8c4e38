"""What `tune-model` shows for a model no recording holds a shape of (a replay): a line as each
shape is settled, not silence until the end, and no budget for a shape that spent none."""

import re

import autosched.device
import autosched.selection
from autosched.cli import main

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
