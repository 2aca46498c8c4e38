"""The results files under bench/results (one JSON a benchmark run) and the README blocks generated from
them: what the report and every report_* section read, below all of them."""

from __future__ import annotations

import json
import re
from pathlib import Path

START = "<!-- results:{name} -->"
END = "<!-- /results:{name} -->"


def latest_results(results_dir: Path, benchmark: str) -> dict | None:
    """The newest results file of a benchmark (by date, then name)."""
    docs = all_results(results_dir, benchmark)
    return docs[0] if docs else None


def all_results(results_dir: Path, benchmark: str, prefix: str | None = None) -> list[dict]:
    """Every results file of a benchmark, newest first (by date, then the run: the file's "run", else
    the N of name-DATE-N.json; then name).  prefix: where the files' names start, where it is not the
    benchmark's name (dataflow-ctx4096-*.json of "dataflow-ctx")."""
    docs = []
    for p in sorted(Path(results_dir).glob(f"{prefix or benchmark}-*.json")):
        try:
            doc = json.loads(p.read_text())
        except (OSError, ValueError):
            continue
        if doc.get("benchmark") == benchmark:
            doc["_path"] = str(p)
            docs.append(doc)
    return sorted(docs, key=lambda d: (d.get("date", ""), d.get("run", _run_number(d["_path"])), d["_path"]),
                  reverse=True)


def _run_number(path: str) -> int:
    """N of name-DATE-N.json (the Nth run of a day); 0 for name-DATE.json, the first."""
    m = re.search(r"-\d{4}-\d{2}-\d{2}-(\d+)\.json$", path)
    return int(m.group(1)) if m else 0


def cell(x, fmt="{:.2f}") -> str:
    """A table cell: the value formatted, or a dash where there is none."""
    return "–" if x is None or (isinstance(x, float) and x != x) else fmt.format(x)


def replace_block(text: str, name: str, body: str) -> str:
    start, end = START.format(name=name), END.format(name=name)
    if start not in text or end not in text:
        raise ValueError(f"README has no {start} ... {end} block")
    head, rest = text.split(start, 1)
    _, tail = rest.split(end, 1)
    return f"{head}{start}\n{body}\n{end}{tail}"
