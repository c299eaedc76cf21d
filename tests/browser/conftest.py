"""The browser tests' shared fixture: ``base_url``, the built site served on a free port, defined
in test_rendered_book.py and used by test_chinese_edition.py too."""

from test_rendered_book import base_url  # noqa: F401
