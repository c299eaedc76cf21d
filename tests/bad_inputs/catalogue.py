"""The catalogue: every entry, from the modules that write them."""

from __future__ import annotations

from collections.abc import Iterator

from . import (  # noqa: F401  (register)
    entries_blocks,
    entries_ch11,
    entries_factory,
    entries_interactive,
    entries_lm,
    entries_models,
    entries_rest,
)
from .harness import REGISTRY, Entry, Outcome, outcomes

ENTRIES: list[Entry] = REGISTRY


def run_entry(entry: Entry) -> Iterator[tuple[str, Outcome]]:
    assert entry.build is not None
    yield from outcomes(entry.build())
