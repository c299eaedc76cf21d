"""Progress bars for long training loops that never become part of a notebook's outputs.

A reader running a chapter in Jupyter sees a live bar; a reader in a terminal sees tqdm's bar on
stderr. What a notebook *stores* must not depend on either: nbval compares every output of a
re-run with the stored one, and a notebook saved after an interactive run must still pass.

In a Jupyter kernel the bar is an ipywidgets widget shown by a display message whose only MIME
type is ``application/vnd.jupyter.widget-view+json``: a frontend draws the widget, while the
stored output holds no text at all (no ``text/plain`` repr, unlike ``display(widget)``), and
nbval leaves that MIME type out of its comparison, because widget model ids are random. The
bar's progress travels as widget (comm) messages, which are not outputs. So a cell prints the
same outputs with the bar on or off.

``ATTNLIB_PROGRESS=0`` turns the bar off (``make execute`` sets it, so the stored outputs and the
HTML book carry no widget at all).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterable, Iterator, Sized
from typing import Any

from attnlib._checks import check_int

__all__ = ["progress", "progress_enabled"]

WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
# Widget updates are comm messages; a few per second is smooth and cheap.
_MIN_INTERVAL_S = 0.2


def progress_enabled() -> bool:
    """False when the environment variable ``ATTNLIB_PROGRESS`` is ``"0"``, True otherwise."""
    return os.environ.get("ATTNLIB_PROGRESS", "1").strip() != "0"


def _in_jupyter_kernel() -> bool:
    """True inside an IPython kernel (Jupyter, nbclient, nbval), False in a terminal."""
    shell_module = sys.modules.get("IPython")
    if shell_module is None:
        return False
    shell = shell_module.get_ipython()
    return shell is not None and type(shell).__name__ == "ZMQInteractiveShell"


def _widget_bar(iterable: Iterable[Any], total: int | None, desc: str | None) -> Iterator[Any]:
    import ipywidgets as widgets  # type: ignore[import-untyped]
    from IPython.display import display

    if total is None and isinstance(iterable, Sized):
        total = len(iterable)
    bar = widgets.IntProgress(value=0, min=0, max=max(total or 1, 1))
    label = widgets.Label(value=f"{desc or ''} 0/{total if total is not None else '?'}")
    box = widgets.HBox([bar, label])
    # Only the widget view: no text/plain, so the stored output has nothing nbval compares.
    display(  # type: ignore[no-untyped-call]
        {WIDGET_MIME: {"model_id": box.model_id, "version_major": 2, "version_minor": 0}},
        raw=True,
    )
    count, last = 0, 0.0
    try:
        for count, item in enumerate(iterable, start=1):
            yield item
            now = time.monotonic()
            if now - last >= _MIN_INTERVAL_S:
                last = now
                bar.value = min(count, bar.max)
                label.value = f"{desc or ''} {count}/{total if total is not None else '?'}"
        bar.bar_style = "success"
    finally:
        bar.value = min(count, bar.max)
        label.value = f"{desc or ''} {count}/{total if total is not None else count}"


def progress(
    iterable: Iterable[Any], total: int | None = None, desc: str | None = None, **kwargs: Any
) -> Iterable[Any]:
    """Wrap ``iterable`` in a progress bar for interactive readers; outputs stay unchanged.

    In a Jupyter kernel: an ipywidgets bar that leaves no comparable output (see the module
    docstring). Elsewhere: tqdm's text bar on stderr (extra keyword arguments go to tqdm).
    With ``ATTNLIB_PROGRESS=0``, or when the needed package is missing, the iterable is
    returned unchanged and nothing is shown.
    """
    if isinstance(iterable, str) or not isinstance(iterable, Iterable):
        raise TypeError(f"iterable must be iterable, got {type(iterable).__name__}")
    if total is not None:
        check_int("total", total, minimum=0)
    if desc is not None and not isinstance(desc, str):
        raise TypeError(f"desc must be a str or None, got {type(desc).__name__}")
    if not progress_enabled():
        return iterable
    if _in_jupyter_kernel():
        try:
            import ipywidgets  # noqa: F401
        except ImportError:  # no widgets: no bar, rather than text that would be stored
            return iterable
        return _widget_bar(iterable, total, desc)
    try:
        from tqdm import tqdm  # type: ignore[import-untyped]
    except ImportError:  # tqdm is an optional dependency of attnlib
        return iterable
    bar: Iterable[Any] = tqdm(iterable, total=total, desc=desc, **kwargs)
    return bar
