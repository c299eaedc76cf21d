"""The browser tests' shared session fixtures, built in test_rendered_book.py (defined here once,
so that every module gets the same one): ``base_url``, the built site served on a free port;
``chromium``, the session's one Chromium; ``visits``, every page test_rendered_book.py checks
and those the other modules registered (test_rendered_book.register), each loaded once.

Where test_rendered_book cannot be imported (no Chromium, no built book) no fixture is defined
here: each module's own import then skips or fails, saying why (an uncaught skip here stopped
pytest with a traceback before 2026-11-29)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

try:
    from test_rendered_book import Chromium, Visit, serve_site, visit_pages
except (pytest.skip.Exception, pytest.fail.Exception):
    pass
else:

    @pytest.fixture(scope="session")
    def base_url() -> Iterator[str]:
        with serve_site() as url:
            yield url

    @pytest.fixture(scope="session")
    def chromium() -> Iterator[Chromium]:
        """One Chromium for every browser test of the session (each opens its own contexts)."""
        browser = Chromium()
        try:
            yield browser
        finally:
            browser.close()

    @pytest.fixture(scope="session")
    def visits(request: pytest.FixtureRequest, base_url: str,
               chromium: Chromium) -> dict[str, Visit]:
        return visit_pages(request, base_url, chromium)
