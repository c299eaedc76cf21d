"""Write the configuration `make book` builds with: ``_config.yml`` plus the repository buttons.

The repository, issues and edit buttons and the Binder launch button all need the URL of the
book's public repository. The book does not invent one: it comes from ``BOOK_REPOSITORY_URL``
or, failing that, from the ``origin`` remote of the git checkout (on a hosted CI service the
checkout's origin is the repository itself). A checkout with no such remote (a local clone, a
tarball) builds the book without those buttons and says so. The download button needs nothing
and is always on.

The Chinese edition (``--language zh_CN``) is the same configuration with ``language: zh_CN``
(the catalogues are ``locales/zh_CN/LC_MESSAGES/<document>.po``, set in ``_config.yml``) and the
book's title as the root page's catalogue translates it.

Usage: ``python tools/book_config.py [--language zh_CN] OUTPUT`` writes OUTPUT (YAML) and prints
what it chose.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml
from babel.messages.pofile import read_po

ROOT = Path(__file__).resolve().parent.parent
BINDERHUB = "https://mybinder.org"

_SCP_LIKE = re.compile(r"^(?:[\w.-]+@)?(?P<host>[\w.-]+\.[a-z]{2,}):(?P<path>[\w./-]+?)(?:\.git)?/?$")
_HTTPS = re.compile(r"^(?:https?|ssh|git)://(?:[\w.-]+@)?(?P<host>[\w.-]+\.[a-z]{2,})(?::\d+)?"
                    r"/(?P<path>[\w./-]+?)(?:\.git)?/?$")


def public_url(remote: str) -> str | None:
    """``https://host/owner/name`` for a remote on a public forge; None for a local path.

    >>> public_url("git@github.com:someone/attention-book.git")
    'https://github.com/someone/attention-book'
    >>> public_url("/work/main") is None
    True
    """
    remote = remote.strip()
    for pattern in (_HTTPS, _SCP_LIKE):
        match = pattern.match(remote)
        if match and match.group("path").count("/") >= 1:
            return f"https://{match.group('host')}/{match.group('path')}"
    return None


def _git(*args: str) -> str | None:
    try:
        done = subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True,
                              check=False)
    except OSError:
        return None
    return done.stdout.strip() if done.returncode == 0 and done.stdout.strip() else None


def repository() -> tuple[str | None, str, str]:
    """(URL or None, branch, where the URL came from)."""
    branch = os.environ.get("BOOK_REPOSITORY_BRANCH") or "main"
    given = os.environ.get("BOOK_REPOSITORY_URL", "").strip()
    if given:
        url = public_url(given)
        if url is None:
            raise SystemExit(f"BOOK_REPOSITORY_URL must be an https URL such as "
                             f"https://github.com/OWNER/NAME, got {given!r}")
        return url, branch, "BOOK_REPOSITORY_URL"
    remote = _git("remote", "get-url", "origin")
    url = public_url(remote) if remote else None
    return url, branch, f"git remote origin ({remote})" if url else ""


def book_config(url: str | None, branch: str) -> dict[str, Any]:
    config: dict[str, Any] = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    # A config outside the book's folder: local extension folders are relative to the config.
    local = config.get("sphinx", {}).get("local_extensions", {})
    for name, folder in local.items():
        local[name] = str((ROOT / folder).resolve())
    if url is None:
        return config
    config["repository"] = {"url": url, "path_to_book": "", "branch": branch}
    config.setdefault("html", {}).update(
        use_repository_button=True, use_issues_button=True, use_edit_page_button=True
    )
    # Binder builds the environment from binder/ (the pinned set, CPU torch, attnlib itself).
    config["launch_buttons"] = {"notebook_interface": "jupyterlab", "binderhub_url": BINDERHUB}
    return config


def translated_title(config: dict[str, Any], language: str) -> str | None:
    """The book's title as the root page's catalogue translates it (None if it does not yet)."""
    root = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))["root"]
    catalogue = ROOT / "locales" / language / "LC_MESSAGES" / f"{root}.po"
    if not catalogue.is_file():
        return None
    with catalogue.open("rb") as handle:
        message = read_po(handle).get(config["title"])
    if message is None or message.fuzzy or not message.string:
        return None
    return str(message.string)


# Sphinx settings of an edition beyond its language (the English ones are in _config.yml).
EDITION_SETTINGS: dict[str, dict[str, Any]] = {
    "zh_CN": {"numfig_format": {"figure": "图 %s", "table": "表 %s"},
              # the prompts of dropdowns (sphinx-togglebutton has no zh_CN catalogue) and of
              # hidden cells (myst-nb), in English otherwise
              "togglebutton_hint": "点击展开", "togglebutton_hint_hide": "点击收起",
              "nb_code_prompt_show": "显示代码单元格", "nb_code_prompt_hide": "隐藏代码单元格"},
}


def edition_config(config: dict[str, Any], language: str) -> dict[str, Any]:
    """The configuration of the edition in ``language`` (``en``: the configuration as it is)."""
    if language == "en":
        return config
    sphinx = config.setdefault("sphinx", {}).setdefault("config", {})
    sphinx["language"] = language
    sphinx.update(EDITION_SETTINGS.get(language, {}))
    title = translated_title(config, language)
    if title:
        config["title"] = title
    return config


def main(argv: list[str]) -> int:
    language = "en"
    if len(argv) == 3 and argv[0] == "--language":
        language, argv = argv[1], argv[2:]
    if len(argv) != 1:
        print("usage: book_config.py [--language zh_CN] OUTPUT", file=sys.stderr)
        return 2
    url, branch, source = repository()
    output = Path(argv[0])
    output.parent.mkdir(parents=True, exist_ok=True)
    config = edition_config(book_config(url, branch), language)
    output.write_text(yaml.safe_dump(config, allow_unicode=True, sort_keys=False),
                      encoding="utf-8")
    if language != "en":
        print(f"book_config: the {language} edition, titled {config['title']!r}")
    if url:
        print(f"book_config: repository {url} (branch {branch}, from {source}): repository, "
              f"issues, edit and Binder buttons on")
    else:
        print("book_config: no public repository URL (set BOOK_REPOSITORY_URL or a git remote "
              "origin on a forge): the book is built without repository and launch buttons")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
