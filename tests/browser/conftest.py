"""The browser tests' shared session fixtures, built in test_rendered_book.py (defined here once,
so that every module gets the same one): ``base_url``, the built site served on a free port;
``chromium``, the session's one Chromium; ``visits``, every page test_rendered_book.py checks
and those the other modules registered (test_rendered_book.register), each loaded once."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from test_rendered_book import Chromium, Visit, serve_site, visit_pages


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
def visits(request: pytest.FixtureRequest, base_url: str, chromium: Chromium) -> dict[str, Visit]:
    return visit_pages(request, base_url, chromium)
