"""Drop the second copy of each inline <script> that Sphinx 7.4 writes into every page.

Sphinx 7.4 keeps a script registered after the builder started (sphinx-thebe and
sphinx-togglebutton register theirs then) twice: once as `_JavaScript(None, body=...)` and
once more, at prepare_writing, as `_JavaScript('', body=...)`; the two do not compare equal.
The page then declares `const THEBE_JS_URL` twice, and the browser logs
"SyntaxError: Identifier 'THEBE_JS_URL' has already been declared" on every page
(tests/browser/test_rendered_book.py fails on console errors).
"""

from __future__ import annotations

from typing import Any


def _dedupe_scripts(app: Any, pagename: str, templatename: str, context: dict[str, Any], doctree: Any) -> None:
    scripts = context.get("script_files")
    if not scripts:
        return
    seen: set[tuple[str, int, tuple[tuple[str, str], ...]]] = set()
    unique = []
    for script in scripts:
        attributes = getattr(script, "attributes", {})
        key = (
            getattr(script, "filename", script) or "",
            getattr(script, "priority", 500),
            tuple(sorted((str(k), str(v)) for k, v in attributes.items())),
        )
        if key not in seen:
            seen.add(key)
            unique.append(script)
    context["script_files"] = unique


def setup(app: Any) -> dict[str, Any]:
    app.connect("html-page-context", _dedupe_scripts)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
