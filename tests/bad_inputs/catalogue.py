"""The catalogue: every entry, from the modules that write them."""

from __future__ import annotations

from collections.abc import Iterator

from . import entries_blocks, entries_lm, entries_models, entries_rest  # noqa: F401  (register)
from .harness import REGISTRY, Entry, Outcome, outcomes

ENTRIES: list[Entry] = REGISTRY


def run_entry(entry: Entry) -> Iterator[tuple[str, Outcome]]:
    assert entry.build is not None
    yield from outcomes(entry.build())
