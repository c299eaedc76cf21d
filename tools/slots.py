"""Commands side by side on the machine's cores: a few slots, and each command takes one or more.

`make test`, `make nbval` and `make reproduce` run many independent commands (lint, the unit
tests, the book's two editions, one nbval process per chapter). On two cores the order matters
more than anything else: a chapter whose experiments train in worker processes (one per core)
runs fastest alone, and a single-threaded step leaves the other core free for another one.

:func:`run` starts the jobs in the order given: a job starts when the jobs it needs have finished
and enough slots are free, and no job overtakes an earlier one that is still waiting for slots
(so a job that needs every slot is not starved by a stream of small ones: put the large ones
first); a job still waiting for its prerequisites lets the later ones pass. Each job runs in its own process group, its output captured whole, with its wall-clock
and CPU seconds (its own and its children's, as ``wait4`` reports them). If a job fails and
``stop_on_failure`` is set, no further job starts and the running ones are stopped; Ctrl-C stops
them all.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

__all__ = ["Job", "Result", "run"]


@dataclass(frozen=True)
class Job:
    """A command. ``slots``: cores it keeps busy (0: it runs beside the others, for a command that
    mostly waits); ``needs``: names of jobs that must pass first."""

    name: str
    command: Sequence[str]
    slots: int = 1
    needs: tuple[str, ...] = ()
    env: Mapping[str, str] | None = None


@dataclass
class Result:
    job: Job
    returncode: int
    output: str
    seconds: float
    cpu_seconds: float
    skipped: bool = field(default=False)

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.skipped


def _execute(job: Job, started: Callable[[int], None]) -> Result:
    t0 = time.perf_counter()
    proc = subprocess.Popen(list(job.command), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            env=None if job.env is None else dict(job.env),
                            start_new_session=True, text=True, errors="replace")
    started(proc.pid)
    assert proc.stdout is not None
    output = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return Result(job, proc.returncode, output, time.perf_counter() - t0,
                  usage.ru_utime + usage.ru_stime)


def run(jobs: Sequence[Job], slots: int, *, stop_on_failure: bool = True,
        on_start: Callable[[Job], None] | None = None,
        on_finish: Callable[[Result], None] | None = None) -> list[Result]:
    """Run ``jobs`` on ``slots`` slots; the results in the order of ``jobs``.

    A job asking for more slots than there are gets all of them. A job whose prerequisite failed
    (or did not run) is skipped, as is every job not yet started when another fails and
    ``stop_on_failure`` is set. ``on_start`` and ``on_finish`` are called from this thread.
    """
    names = [job.name for job in jobs]
    if len(set(names)) != len(names):
        raise ValueError(f"job names must be unique, got {names}")
    unknown = {n for job in jobs for n in job.needs} - set(names)
    if unknown:
        raise ValueError(f"jobs need unknown jobs: {sorted(unknown)}")
    slots = max(1, slots)
    waiting = list(jobs)
    results: dict[str, Result] = {}
    running: dict[str, tuple[threading.Thread, Job]] = {}
    pids: dict[str, int] = {}
    done: list[Result] = []
    cond = threading.Condition()
    free = slots
    stopping = False

    def worker(job: Job) -> None:
        def started(pid: int) -> None:
            with cond:
                pids[job.name] = pid
        try:
            result = _execute(job, started)
        except OSError as exc:  # the command could not start
            result = Result(job, 127, f"{job.command[0]}: {exc}\n", 0.0, 0.0)
        with cond:
            done.append(result)
            cond.notify()

    def stop_all() -> None:
        for pid in list(pids.values()):
            try:
                os.killpg(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass

    try:
        while waiting or running:
            with cond:
                for job in list(waiting):
                    if stopping:
                        break
                    if any(n in results and not results[n].ok for n in job.needs):
                        waiting.remove(job)
                        results[job.name] = Result(job, 1, "", 0.0, 0.0, skipped=True)
                        continue
                    if any(n not in results for n in job.needs):
                        continue  # waits for its prerequisites; the jobs after it may start
                    need = min(job.slots, slots)
                    if need > free:
                        break  # waits for slots; no later job overtakes it
                    waiting.remove(job)
                    free -= need
                    thread = threading.Thread(target=worker, args=(job,), daemon=True)
                    running[job.name] = (thread, job)
                    if on_start:
                        on_start(job)
                    thread.start()
                if stopping:
                    for job in waiting:
                        results[job.name] = Result(job, 1, "", 0.0, 0.0, skipped=True)
                    waiting.clear()
                if not running:
                    if waiting:
                        raise ValueError("jobs wait for each other: "
                                         + ", ".join(job.name for job in waiting))
                    break
                while not done:
                    cond.wait()
                finished = done.pop(0)
            if stopping and finished.returncode < 0:
                finished.skipped = True  # stopped because another job failed
            running.pop(finished.job.name)[0].join()
            pids.pop(finished.job.name, None)
            free += min(finished.job.slots, slots)
            results[finished.job.name] = finished
            if on_finish:
                on_finish(finished)
            if not finished.ok and stop_on_failure and not stopping:
                stopping = True
                with cond:
                    stop_all()
    except KeyboardInterrupt:
        with cond:
            stop_all()
        raise
    return [results[job.name] for job in jobs]
