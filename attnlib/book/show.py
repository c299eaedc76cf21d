"""Show attnlib's own source in a chapter: one source of truth for the book and the library.

A chapter cell ``show_source(attnlib.models.kernel_regression.nadaraya_watson)`` displays the current
code, highlighted. nbval compares that output with the stored one, so when the library changes,
the chapter that explains it fails until it is re-executed (and re-read).
"""

from __future__ import annotations

import inspect
import textwrap
from collections.abc import Sequence

from attnlib._checks import check_flag, check_int


class SourceCode:
    """Python source that Jupyter shows highlighted (Markdown) and nbval compares as text."""

    def __init__(self, source: str, title: str) -> None:
        for name, text in (("source", source), ("title", title)):
            if not isinstance(text, str):
                raise TypeError(f"{name} must be a str, got {type(text).__name__}")
        self.source = source
        self.title = title

    def _repr_markdown_(self) -> str:
        return f"`{self.title}`\n\n```python\n{self.source}\n```\n"

    def __repr__(self) -> str:
        return f"# {self.title}\n{self.source}"


def show_source(obj: object, *, docstring: bool = True) -> SourceCode:
    """Return the source of a function, class or module of attnlib for display.

    Args:
        obj: the object whose definition to show.
        docstring: keep the docstring (True) or drop it to show only the code (False).

    Raises:
        TypeError: for an object whose source is not available (a built-in, an instance).
    """
    try:
        source = textwrap.dedent(inspect.getsource(obj))  # type: ignore[arg-type]
    except (TypeError, OSError) as exc:
        raise TypeError(f"obj must be a function, class or module defined in Python source, "
                        f"got {type(obj).__name__}: {exc}") from None
    if not check_flag("docstring", docstring):
        source = _strip_docstring(source)
    module = getattr(obj, "__module__", None) or getattr(obj, "__name__", "")
    name = getattr(obj, "__qualname__", None)
    title = f"{module}.{name}" if name and module != name else str(module)
    return SourceCode(source.rstrip("\n"), title)


def _strip_docstring(source: str) -> str:
    import ast

    tree = ast.parse(source)
    lines = source.splitlines()
    drop: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Module):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                    and isinstance(body[0].value.value, str):
                end = body[0].end_lineno or body[0].lineno
                drop.update(range(body[0].lineno - 1, end))
    return "\n".join(line for i, line in enumerate(lines) if i not in drop)


class Table:
    """A table that Jupyter and the book render as Markdown and nbval compares as plain text."""

    def __init__(self, headers: list[str], rows: list[list[str]]) -> None:
        _check_cells("headers", headers, str)
        if not headers:
            raise ValueError("headers must name at least one column")
        if isinstance(rows, str) or not isinstance(rows, Sequence):
            raise TypeError(f"rows must be a sequence of rows, got {type(rows).__name__}")
        for i, row in enumerate(rows):
            _check_cells(f"rows[{i}]", row, str)
            if len(row) != len(headers):
                raise ValueError(f"rows[{i}] has {len(row)} cells, expected {len(headers)} "
                                 f"(one per header)")
        self.headers = list(headers)
        self.rows = [list(row) for row in rows]

    def _repr_markdown_(self) -> str:
        head = "| " + " | ".join(self.headers) + " |"
        rule = "|" + "|".join("---:" if i else ":---" for i in range(len(self.headers))) + "|"
        body = ["| " + " | ".join(row) + " |" for row in self.rows]
        return "\n".join([head, rule, *body]) + "\n"

    def __repr__(self) -> str:
        widths = [max([len(h), *(len(r[i]) for r in self.rows)])
                  for i, h in enumerate(self.headers)]
        lines = ["  ".join(h.ljust(w) for h, w in zip(self.headers, widths, strict=True))]
        lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in self.rows]
        return "\n".join(lines)


def table(headers: list[str], rows: list[list[object]], digits: int = 4) -> Table:
    """Format rows for display; floats are printed with ``digits`` significant digits.

    Printed numbers are rounded so the stored output is the same on every machine
    (the low digits of a float sum depend on the CPU's vector width and thread count).

    Raises:
        ValueError: a row whose length differs from the headers'.
    """
    _check_cells("headers", headers, str)
    if not headers:
        raise ValueError("headers must name at least one column")
    check_int("digits", digits, minimum=0)
    if isinstance(rows, str) or not isinstance(rows, Sequence):
        raise TypeError(f"rows must be a sequence of rows, got {type(rows).__name__}")
    formatted: list[list[str]] = []
    for i, row in enumerate(rows):
        _check_cells(f"rows[{i}]", row, object)
        if len(row) != len(headers):
            raise ValueError(f"rows[{i}] has {len(row)} cells, expected {len(headers)} (one per header)")
        formatted.append([f"{c:.{digits}g}" if isinstance(c, float) else str(c) for c in row])
    return Table(list(headers), formatted)


def _check_cells(name: str, cells: object, kind: type) -> None:
    """A sequence (not a str) of ``kind`` values."""
    if isinstance(cells, str) or not isinstance(cells, Sequence):
        raise TypeError(f"{name} must be a sequence (a list), got {type(cells).__name__}")
    for i, cell in enumerate(cells):
        if not isinstance(cell, kind):
            raise TypeError(f"{name}[{i}] must be a {kind.__name__}, got {type(cell).__name__}")
