"""Resolve {numref} without unpickling the target page's doctree once per reference.

Sphinx 7.4's ``StandardDomain._resolve_numref_xref`` calls ``env.get_doctree(docname)`` for every
``{numref}`` only to find the target node, and each call unpickles the whole page: this book's
chapters (doctrees of 0.25 to 0.7 MB, their outputs inline) made 81 such calls per edition, 12 s
of the English build's 78 s (cProfile, 2026-11-29). This domain keeps one unpickled copy of each
page's doctree for the lookups, read only (the lookup and ``get_fignumber`` read the node's type,
ids and title; nothing is written to it), and drops the copies when the build ends.
"""

from __future__ import annotations

from typing import Any

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.domains.std import StandardDomain

_doctrees: dict[int, dict[str, nodes.document]] = {}  # id(env) -> docname -> doctree


class _Env:
    """The build environment, with each page's doctree unpickled once."""

    def __init__(self, env: Any) -> None:
        self._env = env
        self._cache = _doctrees.setdefault(id(env), {})

    def get_doctree(self, docname: str) -> nodes.document:
        if docname not in self._cache:
            self._cache[docname] = self._env.get_doctree(docname)
        return self._cache[docname]

    def __getattr__(self, name: str) -> Any:
        return getattr(self._env, name)


class NumrefCachingStandardDomain(StandardDomain):
    def _resolve_numref_xref(self, env: Any, fromdocname: str, builder: Any, typ: str,
                             target: str, node: Any, contnode: Any) -> Any:
        return super()._resolve_numref_xref(_Env(env), fromdocname, builder, typ, target, node,
                                            contnode)


def _forget(app: Sphinx, exception: Exception | None) -> None:
    _doctrees.pop(id(app.env), None)


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_domain(NumrefCachingStandardDomain, override=True)
    app.connect("build-finished", _forget)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
