"""The catalogue of bad input, run: every documented callable, every mistake, and the NaN sweep.

For each entry (:mod:`bad_inputs.catalogue`) the valid call is made, then each mutation of each
argument and each sweep of its data; every call must end in a ValueError or TypeError whose
message names the argument, or in a finite result equal to its twin (harness.py says how).
``known_failures.txt`` lists the failures not fixed yet, one per line; a failure not listed
fails the test, and so does a listed one that no longer fails (the list only shrinks).

The meta-tests make the coverage structural: every public callable that api.md documents has
an entry, an entry names nothing undocumented, and an entry without mutations is a container.
"""

from __future__ import annotations

import dataclasses
import inspect
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Protocol

import pytest
import torch

from .catalogue import ENTRIES, run_entry
from .harness import FAILURES, Entry, documented_callables

KNOWN_FILE = Path(__file__).with_name("known_failures.txt")


def _known() -> dict[str, set[tuple[str, str]]]:
    known: dict[str, set[tuple[str, str]]] = {}
    for line in KNOWN_FILE.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, mid, kind = (part.strip() for part in line.split(" :: "))
            known.setdefault(name, set()).add((mid, kind))
    return known


KNOWN = _known()


@pytest.fixture(autouse=True)
def quiet_and_one_thread(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Tiny tensors: one thread. No progress bars from the training functions."""
    monkeypatch.setenv("ATTNLIB_PROGRESS", "0")
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("entry", [e for e in ENTRIES if not e.exempt],
                         ids=[e.name for e in ENTRIES if not e.exempt])
def test_every_mistake_ends_in_a_clear_error_or_a_right_answer(entry: Entry) -> None:
    found: dict[tuple[str, str], str] = {}
    tried = 0
    for mid, outcome in run_entry(entry):
        tried += 1
        if mid == "valid":
            assert outcome.kind == "ok", f"the valid call of {entry.name}: {outcome}"
        if outcome.kind in FAILURES:
            found[(mid, outcome.kind)] = outcome.detail
    assert tried > 1 or entry.name.endswith(("parameter_count", "nbytes", "bleu_signature",
                                             "lexicon_words", "default_workers",
                                             "progress_enabled", "use_book_style", "build",
                                             "blocks_in_use", "matmul_weights", "parameters",
                                             "per_token")), (
        f"{entry.name}: its valid call has no argument to mutate")
    known = KNOWN.get(entry.name, set())
    new = {k: v for k, v in found.items() if k not in known}
    fixed = known - set(found)
    assert not new, f"{entry.name}: {len(new)} new failures:\n" + "\n".join(
        f"  {mid} [{kind}]: {detail}" for (mid, kind), detail in sorted(new.items()))
    assert not fixed, (f"{entry.name}: fixed, remove from known_failures.txt:\n"
                       + "\n".join(f"{entry.name} :: {m} :: {k}" for m, k in sorted(fixed)))


def missing_entries(entries: list[Entry], api_md: str | None = None) -> set[str]:
    """Documented public callables without an entry."""
    covered = {entry.name.split("#")[0] for entry in entries}
    return set(documented_callables(api_md)) - covered


def test_every_documented_callable_has_an_entry() -> None:
    assert missing_entries(ENTRIES) == set()


def test_every_entry_names_a_documented_callable() -> None:
    documented = documented_callables()
    assert [e.name for e in ENTRIES if e.name.split("#")[0] not in documented] == []
    assert KNOWN.keys() <= {e.name for e in ENTRIES}


def test_the_meta_test_fails_for_a_callable_without_an_entry(tmp_path: Path) -> None:
    """Proof that the check bites: drop one entry, or document one more module."""
    dropped = [e for e in ENTRIES if e.name.split("#")[0] != "linear_attention"]
    assert missing_entries(dropped) == {"linear_attention"}
    api_md = (Path(__file__).resolve().parents[2] / "api.md").read_text()
    extra = api_md + textwrap.dedent("""
        ```{eval-rst}
        .. automodule:: bad_inputs.undocumented_example
           :members:
        ```
        """)
    assert missing_entries(ENTRIES, extra) == {"newly_public", "NewlyPublic",
                                               "NewlyPublic.method"}


def test_exempt_entries_are_containers() -> None:
    """An entry without mutations is a dataclass, a NamedTuple or a Protocol, with a reason."""
    for entry in ENTRIES:
        if not entry.exempt:
            continue
        obj = documented_callables()[entry.name]
        assert inspect.isclass(obj), entry.name
        container = (dataclasses.is_dataclass(obj) or issubclass(obj, tuple)
                     or Protocol in getattr(obj, "__mro__", ()) or getattr(
                         obj, "_is_protocol", False))
        assert container, f"{entry.name} is exempt but not a container"
        assert len(entry.exempt) > 20, entry.name
    assert len([e for e in ENTRIES if e.exempt]) < len(ENTRIES) // 4
