"""Fixtures shared by the unit tests."""

from __future__ import annotations

import multiprocessing
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import NamedTuple

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


class SpawnPool(NamedTuple):
    """A pool of spawned worker processes and the file their stderr goes to."""

    pool: ProcessPoolExecutor
    stderr: Path


@pytest.fixture(scope="session")
def spawn_pool(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SpawnPool]:
    """One pool of two ``spawn`` worker processes for the whole session, as chapter 9 keeps one
    pool for all its training (``train_runs`` and the long-context runs submitted to it).

    A worker is started when a task finds none idle and costs an interpreter, torch and attnlib
    (about 4 s of CPU), so the tests that use it share its workers. Each worker writes its
    stderr to ``stderr`` (appended; a test reads what its own task wrote), whichever test
    started it and whatever that test's capture was.
    """
    stderr = tmp_path_factory.mktemp("spawn_pool") / "stderr"
    stderr.touch()
    redirect = (f"import os\n"
                f"os.dup2(os.open({str(stderr)!r}, os.O_WRONLY | os.O_APPEND), 2)\n")
    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn"),
                             initializer=exec, initargs=(redirect, {})) as pool:
        yield SpawnPool(pool, stderr)
