"""tools/book_config.py: the repository and launch buttons come from a real URL or not at all."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("book_config", ROOT / "tools" / "book_config.py")
assert _spec and _spec.loader
book_config = importlib.util.module_from_spec(_spec)
sys.modules["book_config"] = book_config
_spec.loader.exec_module(book_config)


@pytest.mark.parametrize(
    ("remote", "expected"),
    [
        ("https://github.com/owner/attention-book.git", "https://github.com/owner/attention-book"),
        ("https://github.com/owner/attention-book", "https://github.com/owner/attention-book"),
        ("git@github.com:owner/attention-book.git", "https://github.com/owner/attention-book"),
        ("ssh://git@gitlab.com/group/sub/book.git", "https://gitlab.com/group/sub/book"),
        ("/work/main", None),  # a clone of a local checkout, as CI makes
        ("../main", None),
        ("file:///work/main", None),
        ("https://github.com/owner", None),  # no repository name
    ],
)
def test_public_url(remote: str, expected: str | None) -> None:
    assert book_config.public_url(remote) == expected


def test_without_url_config_is_config_yml() -> None:
    config = book_config.book_config(None, "main")
    assert "repository" not in config and "launch_buttons" not in config
    assert config["html"]["use_download_button"] is True
    assert not config["html"].get("use_repository_button")
    # The local extension folder must resolve from the generated file's location too.
    for folder in config["sphinx"]["local_extensions"].values():
        assert Path(folder).is_absolute() and (Path(folder) / "dedupe_inline_js.py").is_file()


def test_with_url_buttons_and_binder() -> None:
    config = book_config.book_config("https://github.com/owner/attention-book", "trunk")
    assert config["repository"] == {
        "url": "https://github.com/owner/attention-book", "path_to_book": "", "branch": "trunk"
    }
    html = config["html"]
    assert html["use_repository_button"] and html["use_issues_button"]
    assert html["use_edit_page_button"] and html["use_download_button"]
    assert config["launch_buttons"]["binderhub_url"] == "https://mybinder.org"
    # Binder builds from these files; the lock they include is the one make install uses.
    requirements = (ROOT / "binder" / "requirements.txt").read_text(encoding="utf-8")
    assert "-r ../requirements.lock" in requirements.splitlines()
    assert (ROOT / "binder" / "postBuild").stat().st_mode & 0o111


def test_bad_repository_url_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BOOK_REPOSITORY_URL", "owner/attention-book")
    with pytest.raises(SystemExit, match="BOOK_REPOSITORY_URL must be an https URL"):
        book_config.repository()


def test_url_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BOOK_REPOSITORY_URL", "https://github.com/owner/attention-book/")
    monkeypatch.setenv("BOOK_REPOSITORY_BRANCH", "gh-pages-src")
    url, branch, source = book_config.repository()
    assert (url, branch, source) == (
        "https://github.com/owner/attention-book", "gh-pages-src", "BOOK_REPOSITORY_URL"
    )
