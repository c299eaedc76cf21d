"""attnlib's layers point one way: every import of every module, read from the source (ast).

The layers, from the ground up (attnlib/__init__.py's docstring says the same):

    _checks < book < data < blocks < models < train < experiments

A module may import from its own layer or a layer below it, never from one above, and no
chain of imports may come back to where it started (a circle). attnlib/__init__.py, which
gathers the short names the chapters use, stands above every layer. Imports inside functions
count too: a lazy import that points up is still an arrow up.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "attnlib"
LAYERS = ("_checks", "book", "data", "blocks", "models", "train", "experiments")
TOP = len(LAYERS)  # attnlib/__init__.py


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def layer_of(module: str) -> int:
    """The floor of an attnlib module: the index of its first name below ``attnlib``."""
    parts = module.split(".")
    if parts == ["attnlib"]:
        return TOP
    if parts[1] not in LAYERS:
        raise AssertionError(f"{module} lies in no layer: put it in one of {', '.join(LAYERS)} "
                             f"and tests/test_layers.py knows it")
    return LAYERS.index(parts[1])


def modules(root: Path = ROOT) -> dict[str, Path]:
    return {module_name(p, root): p for p in sorted(root.rglob("*.py"))}


def imports(path: Path, known: set[str], root: Path = ROOT) -> list[tuple[str, int]]:
    """The attnlib modules ``path`` imports, with line numbers (module level and inside
    functions). ``from attnlib.x import y`` imports ``attnlib.x``, and ``attnlib.x.y`` too
    when that is a module."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = module_name(path, root)
    if path.name != "__init__.py":
        package = package.rpartition(".")[0]
    found: list[tuple[str, int]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # a relative import, resolved against the package
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            found.append((target, node.lineno))
            found += [(f"{target}.{alias.name}", node.lineno) for alias in node.names
                      if f"{target}.{alias.name}" in known]
    return [(name, line) for name, line in found
            if (name == "attnlib" or name.startswith("attnlib.")) and name in known]


def graph(root: Path = ROOT) -> dict[str, list[tuple[str, int]]]:
    found = modules(root)
    known = set(found)
    return {name: imports(path, known, root) for name, path in found.items()}


def upward_imports(edges: dict[str, list[tuple[str, int]]]) -> list[str]:
    bad = []
    for source, targets in edges.items():
        for target, line in targets:
            if layer_of(target) > layer_of(source):
                bad.append(f"{source} (line {line}) imports {target}: "
                           f"{LAYERS[layer_of(source)]} may not import from "
                           f"{'attnlib' if layer_of(target) == TOP else LAYERS[layer_of(target)]},"
                           f" a layer above it")
    return bad


def circles(edges: dict[str, list[tuple[str, int]]]) -> list[list[str]]:
    """Every import circle, each once, as the list of modules around it."""
    found: list[list[str]] = []
    seen: set[frozenset[str]] = set()
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        path.append(node)
        for target, _ in edges.get(node, []):
            if target == node:
                continue
            if state.get(target) == 1:
                cycle = [*path[path.index(target):], target]
                if frozenset(cycle) not in seen:
                    seen.add(frozenset(cycle))
                    found.append(cycle)
            elif state.get(target) is None:
                visit(target)
        path.pop()
        state[node] = 2

    for node in sorted(edges):
        if node not in state:
            visit(node)
    return found


def test_every_module_lies_in_a_layer() -> None:
    names = modules()
    assert len(names) > 30
    for name in names:
        layer_of(name)  # raises for a module outside the layers


@pytest.fixture(scope="module")
def attnlib_graph() -> dict[str, list[tuple[str, int]]]:
    """attnlib's import graph, read once for the tests of the real package (each reading parses
    every module)."""
    return graph()


def test_no_import_points_up_a_layer(attnlib_graph: dict[str, list[tuple[str, int]]]) -> None:
    bad = upward_imports(attnlib_graph)
    assert not bad, "imports that point up:\n" + "\n".join(bad)


def test_no_import_circle(attnlib_graph: dict[str, list[tuple[str, int]]]) -> None:
    found = circles(attnlib_graph)
    assert not found, "import circles:\n" + "\n".join(" -> ".join(c) for c in found)


def test_the_graph_sees_imports(attnlib_graph: dict[str, list[tuple[str, int]]]) -> None:
    """The reader is not blind: it finds imports the library is known to have, inside a
    function too (translation imports seq2seq's greedy decoder lazily)."""
    edges = attnlib_graph
    assert any(t == "attnlib._checks" for t, _ in edges["attnlib.blocks.attention"])
    assert any(t == "attnlib.models.seq2seq" for t, _ in edges["attnlib.train.translation"])
    assert any(t == "attnlib.models.transformer.model" for t, _ in edges["attnlib.train.decoding"])


# The checks themselves can fail: a small fake package with an upward import and a circle.


def _fake_package(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "attnlib"
    for name, text in {"__init__.py": "", **files}.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def test_an_upward_import_is_found(tmp_path: Path) -> None:
    root = _fake_package(tmp_path, {
        "blocks/__init__.py": "",
        "blocks/attention.py": "def f():\n    from attnlib.train import loop\n",
        "train/__init__.py": "",
        "train/loop.py": "from attnlib.blocks.attention import f\n",
    })
    assert sorted(upward_imports(graph(root))) == [
        "attnlib.blocks.attention (line 2) imports attnlib.train.loop: blocks may not import "
        "from train, a layer above it",
        "attnlib.blocks.attention (line 2) imports attnlib.train: blocks may not import from "
        "train, a layer above it",
    ]


def test_a_circle_is_found(tmp_path: Path) -> None:
    root = _fake_package(tmp_path, {
        "models/__init__.py": "",
        "models/a.py": "from attnlib.models.b import g\n",
        "models/b.py": "import attnlib.models.c\n",
        "models/c.py": "from . import a\n",
    })
    assert upward_imports(graph(root)) == []
    assert circles(graph(root)) == [["attnlib.models.a", "attnlib.models.b", "attnlib.models.c",
                                     "attnlib.models.a"]]


def test_a_module_outside_the_layers_is_refused(tmp_path: Path) -> None:
    root = _fake_package(tmp_path, {"helpers.py": ""})
    with pytest.raises(AssertionError, match=r"attnlib\.helpers lies in no layer"):
        for name in modules(root):
            layer_of(name)


def test_no_module_is_over_600_lines() -> None:
    """A module holds one idea, a few hundred lines at most (the developers' guide)."""
    long = {name: n for name, path in modules().items()
            if (n := len(path.read_text(encoding="utf-8").splitlines())) > 600}
    assert not long, f"modules over 600 lines (split them): {long}"
