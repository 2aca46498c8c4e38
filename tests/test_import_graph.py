"""No import circles in autosched: the modules' imports (at the top or inside functions alike, read with
ast) form a graph without cycles, so any module imports on its own and the layers read one way."""

import ast
from pathlib import Path

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
