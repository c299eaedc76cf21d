"""Fixtures shared by the unit tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch

# One thread for every unit test: the tensors are small, and `make test` runs the unit tests in
# one of its slots beside other steps, so a second thread only waits for a core (three training
# tests measured on the loaded 2-core machine: 29.7 s at one thread, 38.3 s at two, the same CPU
# seconds). A test about threads sets its own count; subprocesses set theirs from the environment.
torch.set_num_threads(1)


@pytest.fixture
def one_thread() -> Iterator[None]:
    """The tensors are tiny: a second thread only adds synchronisation (and waits on a busy CPU).

    Use with ``pytestmark = pytest.mark.usefixtures("one_thread")``.
    """
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
