"""tools/slots.py, the scheduler of `make test`, `make nbval` and `make reproduce`: slots are
never oversubscribed, no job overtakes one waiting for slots, prerequisites come first, a failure
stops the rest, and every result carries its output and its CPU seconds."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))

import slots


def _sleep(name: str, seconds: float, n: int = 1, *needs: str, code: int = 0) -> slots.Job:
    script = (f"import time, sys; print('{name} ran'); time.sleep({seconds}); "
              f"sys.exit({code})")
    return slots.Job(name, [sys.executable, "-c", script], slots=n, needs=needs)


def _timeline(jobs: list[slots.Job], n: int, **kwargs: object) -> tuple[list[slots.Result],
                                                                      list[tuple[str, str]]]:
    events: list[tuple[str, str]] = []
    results = slots.run(jobs, n, on_start=lambda j: events.append(("start", j.name)),
                        on_finish=lambda r: events.append(("end", r.job.name)),
                        **kwargs)  # type: ignore[arg-type]
    return results, events


def test_two_slots_run_two_single_jobs_at_once_and_a_whole_job_alone() -> None:
    jobs = [_sleep("a", 0.4), _sleep("b", 0.4), _sleep("whole", 0.2, 2), _sleep("c", 0.1)]
    results, events = _timeline(jobs, 2)
    assert [r.job.name for r in results] == ["a", "b", "whole", "c"]
    assert all(r.ok and r.output == f"{r.job.name} ran\n" for r in results)
    assert events[:2] == [("start", "a"), ("start", "b")]
    # "whole" needs both slots: it starts after a and b end, and c (one slot) does not overtake it
    whole = events.index(("start", "whole"))
    assert {("end", "a"), ("end", "b")} <= set(events[:whole])
    assert events.index(("start", "c")) > events.index(("end", "whole"))


def test_a_job_waits_for_its_prerequisites_and_lets_the_others_pass() -> None:
    jobs = [_sleep("book", 0.5), _sleep("browser", 0.0, 1, "book"), _sleep("unit", 0.1)]
    _, events = _timeline(jobs, 2)
    assert events.index(("start", "unit")) < events.index(("end", "book"))
    assert events.index(("start", "browser")) > events.index(("end", "book"))


def test_a_failure_stops_the_running_jobs_and_skips_the_rest() -> None:
    jobs = [_sleep("long", 30), _sleep("bad", 0.1, code=3), _sleep("later", 0.0),
            _sleep("after-bad", 0.0, 1, "bad")]
    start = time.perf_counter()
    results, _ = _timeline(jobs, 2)
    assert time.perf_counter() - start < 20  # "long" was stopped, not waited for
    state = {r.job.name: (r.returncode, r.skipped) for r in results}
    assert state["bad"] == (3, False)
    assert state["long"][1] and state["later"][1] and state["after-bad"][1]
    assert not any(r.ok for r in results)


def test_without_stop_on_failure_every_job_runs() -> None:
    jobs = [_sleep("bad", 0.0, code=1), _sleep("good", 0.0), _sleep("needs-bad", 0.0, 1, "bad")]
    results, _ = _timeline(jobs, 1, stop_on_failure=False)
    assert [(r.job.name, r.ok, r.skipped) for r in results] == [
        ("bad", False, False), ("good", True, False), ("needs-bad", False, True)]


def test_cpu_seconds_count_the_children() -> None:
    spin = ("import subprocess, sys; subprocess.run([sys.executable, '-c', "
            "'import time\\nt = time.process_time()\\nwhile time.process_time() - t < 0.6: pass'])")
    (result,) = slots.run([slots.Job("spin", [sys.executable, "-c", spin])], 1)
    assert result.ok and result.cpu_seconds >= 0.5


def test_bad_job_lists_are_refused() -> None:
    with pytest.raises(ValueError, match="unique"):
        slots.run([_sleep("a", 0), _sleep("a", 0)], 1)
    with pytest.raises(ValueError, match="unknown"):
        slots.run([_sleep("a", 0, 1, "nowhere")], 1)
    with pytest.raises(ValueError, match="wait for each other"):
        slots.run([_sleep("a", 0, 1, "b"), _sleep("b", 0, 1, "a")], 1)


def test_a_job_of_no_slots_runs_beside_a_job_that_takes_them_all() -> None:
    jobs = [_sleep("whole", 0.6, 2), _sleep("waits", 0.1, 0), _sleep("next", 0.0)]
    _, events = _timeline(jobs, 2)
    assert events.index(("start", "waits")) < events.index(("end", "whole"))
    assert events.index(("start", "next")) > events.index(("end", "whole"))


def test_make_test_runs_the_browser_test_once_the_books_are_built_before_the_worker_chapters(
        ) -> None:
    import run_tests

    chapters = [f"chapters/{name}.ipynb" for name in (
        "01_kernel_regression", "04_seq2seq_attention", "10_modern_attention")]
    jobs = {job.name: job for job in run_tests.steps(chapters, 2)}
    names = list(jobs)
    browser = jobs["browser-check"]
    assert browser.slots == 0 and browser.needs == ("book-join",)
    assert names[:5] == ["lint", "book-en", "book-zh-html", "book-join", "browser-check"]
    # the unit tests in two halves, first among the one-core steps: they take the longest
    assert names[5:7] == ["unit-first-half", "unit-second-half"]
    assert names.index("unit-second-half") < names.index(
        "nbval chapters/01_kernel_regression.ipynb") < names.index(
        "nbval chapters/04_seq2seq_attention.ipynb")
    assert [jobs[n].slots for n in names[-2:]] == [2, 2]
    assert [jobs[n].needs for n in names[-2:]] == [("browser-check",)] * 2


def test_make_test_runs_the_short_chapters_beside_the_chapter_that_leaves_a_core_idle() -> None:
    import run_tests

    chapters = [f"chapters/{name}.ipynb" for name in (
        "01_kernel_regression", "04_seq2seq_attention", "07_transformer",
        "08_efficient_attention", "10_modern_attention")]
    jobs = {job.name: job for job in run_tests.steps(chapters, 2)}
    names = [n.removeprefix("nbval chapters/").removesuffix(".ipynb") for n in jobs
             if n.startswith("nbval ")]
    # chapter 8 stays in the first phase; chapter 1 follows chapter 7, which takes one core
    assert names == ["08_efficient_attention", "04_seq2seq_attention", "07_transformer",
                     "01_kernel_regression", "10_modern_attention"]
    by_stem = {n.removeprefix("nbval chapters/").removesuffix(".ipynb"): job
               for n, job in jobs.items()}
    assert [by_stem[n].slots for n in names] == [1, 2, 1, 1, 2]
    assert by_stem["01_kernel_regression"].needs == ("nbval chapters/04_seq2seq_attention.ipynb",)
    # without chapter 7 nothing moves
    alone = run_tests.steps([c for c in chapters if "07_" not in c], 2)
    assert all(job.needs == () for job in alone if job.name.endswith("01_kernel_regression.ipynb"))
