"""Module-level literals of the project's files, read with ast rather than imported: the GPU tests and
scripts import torch, whose absence (CI) would skip a CPU check of what they pin."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def literal(path: str, name: str):
    """The value a top-level assignment of `path` (relative to the repository) binds to `name`,
    `a, b = x, y` included; KeyError if no literal is bound to it there."""
    tree = ast.parse((ROOT / path).read_text())
    for node in tree.body:
        if not isinstance(node, ast.Assign):
            continue
        target = node.targets[0]
        if isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple) and len(target.elts) == len(node.value.elts):
            pairs = zip(target.elts, node.value.elts)
        else:
            pairs = [(target, node.value)]
        for t, v in pairs:
            if getattr(t, "id", "") == name:
                return ast.literal_eval(v)
    raise KeyError(f"{name} is not assigned a literal in {path}")
