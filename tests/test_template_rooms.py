"""A template is one room: no module outside autosched/templates/ decides anything by testing a
template's name (`family == "hgemm_stream"`, `fam in WG_FAMILIES`, `name == SWP`); it asks the template."""

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "autosched"
FAMILIES = frozenset(m for p in (PACKAGE / "templates").glob("*.py")
                     for m in re.findall(r'^\s+family = "(\w+)"', p.read_text(), re.M))
NAMEISH = re.compile(r"\b(family|families|fam|fams|template)\b")


NAME_OPS = (ast.Eq, ast.NotEq, ast.In, ast.NotIn)


def _is_name_literal(node) -> bool:
    if isinstance(node, ast.Constant):
        return node.value in FAMILIES
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return any(_is_name_literal(e) for e in node.elts)
    return False


def _is_constant_name(node) -> bool:
    """An UPPER_CASE module constant (WG, TMA_FAMILIES, SPLIT), or one read off a module (H.SWP)."""
    name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""
    return len(name) > 1 and name.isupper()


def name_tests(source: str) -> list[tuple[int, str]]:
    """(line, comparison) of every test of a template's name against a literal or a constant."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Compare) or not all(isinstance(o, NAME_OPS) for o in node.ops):
            continue
        sides = [node.left, *node.comparators]
        for a, b in zip(sides, sides[1:]):
            for x, y in ((a, b), (b, a)):
                if _is_name_literal(y) or (_is_constant_name(y) and NAMEISH.search(ast.unparse(x))):
                    out.append((node.lineno, ast.unparse(node)))
                    break
            else:
                continue
            break
    return out


def test_the_scan_finds_every_kind_of_name_test():
    src = '''
if family == "hgemm_stream": pass
if t.family in ("hgemm_wgmma", "hgemm_wgmma_splitk"): pass
if fam in WG_FAMILIES: pass
if self.families[i] == SWP: pass
if fam not in SPLIT: pass
if "hgemm_dyn" != name: pass
if t.tma and family == other: pass
if w.name == "hgemm": pass
'''
    assert [line for line, _ in name_tests(src)] == [2, 3, 4, 5, 6, 7]


def test_no_module_outside_templates_tests_a_template_name():
    found = [f"{p.relative_to(PACKAGE)}:{line}: {text}" for p in sorted(PACKAGE.rglob("*.py"))
             if "templates" not in p.relative_to(PACKAGE).parts for line, text in name_tests(p.read_text())]
    assert found == []
