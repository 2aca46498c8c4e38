"""No import circles in autosched: the modules' imports (at the top or inside functions alike, read with
ast) form a graph without cycles, so any module imports on its own and the layers read one way.  Imports
sit at the top of a module; one inside a function is explained by a comment near the module's top, and
the light entry points start without the heavy dependencies."""

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# no circle is allowed (the engine's with its prefill went with engine/shapes.py)
ALLOWED_CIRCLES: set = set()


def _module(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(sources: dict[str, str]) -> dict[str, set[str]]:
    """module -> the modules of `sources` it imports (a from-import of a name resolved to its module)."""
    def resolve(name: str) -> str | None:
        while name and name not in sources:
            name = name.rpartition(".")[0]
        return name or None

    graph = {}
    for mod, text in sources.items():
        out = set()
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Import):
                out |= {r for a in node.names if (r := resolve(a.name))}
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    pkg = mod.split(".")[: len(mod.split(".")) - node.level]
                    base = ".".join(pkg + ([base] if base else []))
                out |= {r for a in node.names if (r := resolve(f"{base}.{a.name}") or resolve(base))}
        graph[mod] = out - {mod}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[frozenset]:
    """The strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop()
                on.discard(w)
                comp.add(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(frozenset(comp))
    for v in graph:
        if v not in index:
            visit(v)
    return out


def test_the_scan_finds_a_circle_through_a_function_level_import():
    graph = import_graph({"p.a": "from p.b import f\n", "p.b": "def f():\n    from p import c\n",
                          "p.c": "import p.a\n", "p.d": "from p.a import x\n", "p": ""})
    assert cycles(graph) == [frozenset({"p.a", "p.b", "p.c"})]


def test_autosched_has_no_import_circles():
    sources = {_module(p): p.read_text() for p in sorted((ROOT / "autosched").rglob("*.py"))}
    assert set(cycles(import_graph(sources))) <= ALLOWED_CIRCLES


PHRASE = "imported inside functions"
# what `import autosched`, its API and its command line start without (optional, or slow to import)
HEAVY = ("torch", "cuda", "sklearn", "matplotlib", "ray", "transformers", "safetensors", "tokenizers", "ml_dtypes")


def function_level_imports(tree: ast.Module) -> list:
    """The import statements inside function bodies (nested functions' included, each once)."""
    found = {}
    for f in ast.walk(tree):
        if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for node in ast.walk(f):
                if isinstance(node, (ast.Import, ast.ImportFrom)):
                    found[id(node)] = node
    return list(found.values())


def top_comment(text: str, tree: ast.Module) -> str:
    """The module-level comments above its first function or class, joined into one text."""
    first = min((n.lineno for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                                 ast.ClassDef))), default=None)
    lines = text.splitlines()[: first - 1 if first else None]
    return " ".join(line[1:].strip() for line in lines if line.startswith("#"))


def test_function_level_imports_are_explained_at_the_modules_top():
    """Every module with an import inside a function says why near its top (an optional or slow
    dependency, a module the command line starts without, a name tests replace on its module), in a
    comment holding "imported inside functions" that names each third-party package imported so."""
    unexplained, unnamed = [], []
    for p in sorted((ROOT / "autosched").rglob("*.py")):
        text = p.read_text()
        tree = ast.parse(text)
        nodes = function_level_imports(tree)
        if not nodes:
            continue
        rel = p.relative_to(ROOT).as_posix()
        comment = top_comment(text, tree)
        if PHRASE not in comment:
            unexplained.append(rel)
            continue
        for node in nodes:
            if getattr(node, "level", 0):
                continue                                  # a relative import: autosched's own
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module]
            for top in {name.split(".")[0] for name in names}:
                if top not in ("autosched", "numpy") and top not in sys.stdlib_module_names and top not in comment:
                    unnamed.append(f"{rel}:{node.lineno} {top}")
    assert not unexplained, f"function-level imports without a comment saying why ({PHRASE!r}): {unexplained}"
    assert not unnamed, f"third-party packages imported inside functions, not named in the comment: {unnamed}"


@pytest.mark.parametrize("entry", ["autosched", "autosched.api", "autosched.cli"])
def test_the_entry_points_start_without_the_heavy_dependencies(entry):
    code = f"import sys, {entry}; print(' '.join(sorted({{m.split('.')[0] for m in sys.modules}} & {set(HEAVY)!r})))"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == [], f"`import {entry}` loads {out.stdout.strip()}"
