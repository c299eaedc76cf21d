"""The nbval runners of `make nbval` (tools/nbval_chapters.py) and `make reproduce`
(tools/reproduce.py): a wrong stored output fails the run, and --after-make-test leaves out
exactly the combination that repeats `make test`'s own run."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

import nbval_chapters  # noqa: E402
import reproduce  # noqa: E402


def _notebook(path: Path, stored: str) -> str:
    """One cell that prints 2, stored with the output ``stored``."""
    cell = nbformat.v4.new_code_cell("print(1 + 1)")
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=stored)]
    cell.execution_count = 1
    nb = nbformat.v4.new_notebook(cells=[cell])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    nbformat.write(nb, path)
    return str(path)


FAKE_NBVAL = """import io, json, sys
from contextlib import redirect_stdout
cells = [c for c in json.load(open(sys.argv[-1]))["cells"] if c["cell_type"] == "code"]
passed = failed = 0
for cell in cells:
    out = io.StringIO()
    with redirect_stdout(out):
        exec("".join(cell["source"]), {})
    stored = "".join("".join(o.get("text", "")) for o in cell["outputs"])
    if out.getvalue() == stored:
        passed += 1
    else:
        failed += 1
        print(f"FAILED {sys.argv[-1]}::Cell 0")
print(f"{failed} failed, {passed} passed in 0.01s" if failed else f"{passed} passed in 0.01s")
sys.exit(1 if failed else 0)
"""


@pytest.fixture
def fake_nbval(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """reproduce's accounting without a Jupyter kernel per notebook: a stand-in for pytest --nbval
    that runs each code cell in-process and compares its printed text with the stored stream
    (test_reproduce_counts_a_real_nbval_failure runs the real command)."""
    script = tmp_path / "fake_nbval.py"
    script.write_text(FAKE_NBVAL, encoding="utf-8")
    monkeypatch.setattr(reproduce, "NBVAL", [sys.executable, str(script)])


def test_nbval_chapters_fails_on_a_wrong_output_and_prints_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(ROOT)  # the sanitize file is named relative to the repository
    good = _notebook(tmp_path / "good.ipynb", "2\n")
    bad = _notebook(tmp_path / "bad.ipynb", "3\n")
    real = nbval_chapters.run_jobs
    done: list[Any] = []

    def spy(jobs, cores, **kwargs):  # type: ignore[no-untyped-def]
        results = real(jobs, cores, **kwargs)
        done.extend(results)
        return results

    monkeypatch.setattr(nbval_chapters, "run_jobs", spy)
    assert nbval_chapters.main(["--jobs", "2", good, bad]) == 1
    out = capsys.readouterr().out
    assert f"ok     {good}" in out and f"FAILED {bad}" in out
    assert "1 of 2 notebooks passed" in out
    assert "Cell outputs differ" in out  # the failed notebook's own pytest output
    # Every notebook passes: exit status 0. The good notebook's real result is given back for
    # the same job (running it again would start another pytest and kernel, ~4 s of CPU).
    (passed,) = [result for result in done if result.job.name == good]

    def replay(jobs, cores, **kwargs):  # type: ignore[no-untyped-def]
        assert [job.command for job in jobs] == [passed.job.command] and cores == 1
        kwargs["on_finish"](passed)
        return [passed]

    monkeypatch.setattr(nbval_chapters, "run_jobs", replay)
    assert nbval_chapters.main(["--jobs", "1", good]) == 0
    assert f"ok     {good}" in capsys.readouterr().out


def test_reproduce_after_make_test_skips_only_make_tests_own_run(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], fake_nbval: None) -> None:
    monkeypatch.chdir(ROOT)
    monkeypatch.setattr(reproduce, "make_test_run", lambda: (2, "avx2"))
    monkeypatch.setattr(reproduce, "machine_vendor", lambda: "intel")
    good = _notebook(tmp_path / "good.ipynb", "2\n")
    report = tmp_path / "reproduce.md"
    code = reproduce.main(["--combos", "1:default", "2:avx2", "--after-make-test",
                           "--report", str(report), good])
    assert code == 0
    table = report.read_text(encoding="utf-8")
    assert "| 1 | default | this machine's | 1 |" in table
    assert "| 2 | avx2 | this machine's | - | make test's own run |" in table
    assert "1 of 1 combinations passed" in table
    assert "not repeated" in capsys.readouterr().out
    # Without the flag both combinations run.
    assert reproduce.main(["--combos", "1:default", "2:avx2", "--report", str(report), good]) == 0
    assert "2 of 2 combinations passed" in report.read_text(encoding="utf-8")


def test_the_longest_chapters_start_first_and_the_table_keeps_the_given_order() -> None:
    given = [f"chapters/{name}.ipynb" for name in (
        "01_kernel_regression", "04_seq2seq_attention", "05_multihead_self_attention",
        "09_attention_in_language_models", "10_modern_attention")]
    assert reproduce.longest_first(given) == [given[1], given[3], given[4], given[0], given[2]]
    assert reproduce.longest_first(given[::-1])[3:] == [given[2], given[0]]


def test_chapters_with_worker_processes_take_every_core_and_run_after_the_others() -> None:
    given = [f"chapters/{name}.ipynb" for name in (
        "01_kernel_regression", "04_seq2seq_attention", "08_efficient_attention",
        "10_modern_attention")]
    jobs = reproduce.chapter_jobs(given, 2)
    assert [(job.name, job.slots) for job in jobs] == [
        (given[1], 2), (given[3], 2), (given[2], 1), (given[0], 1)]
    assert all(job.command[-1] == job.name for job in jobs)
    assert [job.slots for job in reproduce.chapter_jobs(given, 1)] == [1, 1, 1, 1]


def test_reproduce_runs_a_combination_as_an_amd_processor_and_repeats_no_own_run(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_nbval: None) -> None:
    """2:avx2:amd is not make test's own run on an Intel machine (the chapters then ask MKL for
    what an AMD processor gets): it runs, with ATTNLIB_CPU_VENDOR set; on an AMD machine it is
    make test's own run."""
    monkeypatch.chdir(ROOT)
    monkeypatch.setattr(reproduce, "make_test_run", lambda: (2, "avx2"))
    seen: list[dict[str, str]] = []
    real = reproduce.run_jobs

    def spy(jobs, slots, **kwargs):  # type: ignore[no-untyped-def]
        seen.extend(dict(job.env) for job in jobs)
        return real(jobs, slots, **kwargs)

    monkeypatch.setattr(reproduce, "run_jobs", spy)
    good = _notebook(tmp_path / "good.ipynb", "2\n")
    report = tmp_path / "reproduce.md"
    for vendor, ran in (("intel", 1), ("amd", 0)):
        seen.clear()
        monkeypatch.setattr(reproduce, "machine_vendor", lambda v=vendor: v)
        assert reproduce.main(["--combos", "2:avx2:amd", "--after-make-test",
                               "--report", str(report), good]) == 0
        assert len(seen) == ran
        assert all(env["ATTNLIB_CPU_VENDOR"] == "AuthenticAMD"
                   and env["ATEN_CPU_CAPABILITY"] == "avx2" for env in seen)
    assert "| 2 | avx2 | AuthenticAMD | - | make test's own run |" in report.read_text(
        encoding="utf-8")
    with pytest.raises(SystemExit):
        reproduce.main(["--combos", "2:avx2:arm", good])


def test_the_combinations_share_one_pool_and_each_reports_its_own_failures(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_nbval: None) -> None:
    """Both combinations' notebooks run in one pool; a notebook whose stored output is wrong
    fails every combination, and the table counts each combination's cells apart."""
    monkeypatch.chdir(ROOT)
    good = _notebook(tmp_path / "good.ipynb", "2\n")
    bad = _notebook(tmp_path / "bad.ipynb", "3\n")
    report = tmp_path / "reproduce.md"
    assert reproduce.main(["--combos", "1:default", "2:avx2", "--cores", "2",
                           "--report", str(report), good, bad]) == 1
    table = report.read_text(encoding="utf-8")
    assert "| 1 | default | this machine's | 1 | 1 | 1 |" in table
    assert "| 2 | avx2 | this machine's | 1 | 1 | 1 |" in table
    assert "0 of 2 combinations passed" in table


def test_a_single_process_chapter_follows_each_worker_chapter_in_the_pool() -> None:
    given = [f"chapters/{name}.ipynb" for name in (
        "01_kernel_regression", "04_seq2seq_attention", "05_multihead_self_attention",
        "08_efficient_attention", "10_modern_attention")]
    combos = [("[a]", {"X": "a"}, given), ("[b]", {"X": "b"}, given)]
    jobs = reproduce.pooled_jobs(combos, 2)
    assert len(jobs) == 10 and len({job.name for job in jobs}) == 10
    assert [job.slots for job in jobs] == [2, 1, 1, 2, 1, 1, 2, 1, 2, 1]
    assert [job.name for job in jobs[:4]] == [
        f"[a] {given[1]}", f"[a] {given[3]}", f"[b] {given[3]}", f"[b] {given[1]}"]
    assert [job.env["X"] for job in jobs if job.env] == [
        "a", "a", "b", "b", "a", "b", "a", "a", "b", "b"]
    assert [job.slots for job in reproduce.pooled_jobs(combos, 1)] == [1] * 10


def test_a_chapter_that_pins_its_code_paths_is_not_repeated_at_make_tests_thread_count(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], fake_nbval: None) -> None:
    """attnlib.fix_cpu_kernels replaces the capability a combination asks for, so at make test's
    thread count and on this machine's vendor a pinning chapter computes make test's own run:
    --after-make-test leaves it out of that combination and runs it in every other one."""
    monkeypatch.chdir(ROOT)
    monkeypatch.setattr(reproduce, "make_test_run", lambda: (1, "avx512"))
    monkeypatch.setattr(reproduce, "machine_vendor", lambda: "amd")
    plain = _notebook(tmp_path / "plain.ipynb", "2\n")
    pinning = tmp_path / "pinning.ipynb"
    nb = nbformat.read(plain, as_version=4)
    nb.cells.insert(0, nbformat.v4.new_code_cell("fix_cpu_kernels = print\nfix_cpu_kernels()"))
    nb.cells[0].outputs = [nbformat.v4.new_output("stream", name="stdout", text="\n")]
    nb.cells[0].execution_count = 1
    nbformat.write(nb, pinning)
    assert reproduce.pins_code_paths(str(pinning)) and not reproduce.pins_code_paths(plain)
    # the name in a comment or a string, or a call after the first cell, pins nothing
    for first, later in (("# attnlib.fix_cpu_kernels()\nx = 1", ""),
                         ("x = 'fix_cpu_kernels()'", ""),
                         ("x = 1", "fix_cpu_kernels = print\nfix_cpu_kernels()")):
        other = nbformat.read(plain, as_version=4)
        other.cells.insert(0, nbformat.v4.new_code_cell(first))
        if later:
            other.cells.append(nbformat.v4.new_code_cell(later))
        nbformat.write(other, tmp_path / "other.ipynb")
        assert not reproduce.pins_code_paths(str(tmp_path / "other.ipynb")), (first, later)
    chapters = sorted(str(p) for p in (ROOT / "chapters").glob("*.ipynb"))
    assert [Path(nb).stem[:2] for nb in chapters if reproduce.pins_code_paths(nb)] == [
        "04", "07", "10", "11"]
    seen: list[tuple[str, str]] = []
    real = reproduce.run_jobs

    def spy(jobs, slots, **kwargs):  # type: ignore[no-untyped-def]
        seen.extend((job.env["ATTNLIB_NUM_THREADS"], job.command[-1]) for job in jobs)
        return real(jobs, slots, **kwargs)

    monkeypatch.setattr(reproduce, "run_jobs", spy)
    report = tmp_path / "reproduce.md"
    assert reproduce.main(["--combos", "1:default", "2:avx2", "--after-make-test",
                           "--report", str(report), plain, str(pinning)]) == 0
    assert sorted(seen) == sorted([("1", plain), ("2", plain), ("2", str(pinning))])
    assert "pinning pin their code paths" in capsys.readouterr().out
    table = report.read_text(encoding="utf-8")
    assert "| 1 | default | this machine's | 1 | 1 (1 pinned chapters: make test's own run) |" in table
    assert "| 2 | avx2 | this machine's | 1 | 3 |" in table
    # Another vendor computes differently: the pinning chapter runs at one thread too.
    seen.clear()
    assert reproduce.main(["--combos", "1:default:intel", "--after-make-test",
                           "--report", str(report), plain, str(pinning)]) == 0
    assert sorted(seen) == sorted([("1", plain), ("1", str(pinning))])
    # Only the pinning chapter: the combination is make test's own run.
    seen.clear()
    assert reproduce.main(["--combos", "1:default", "--after-make-test",
                           "--report", str(report), str(pinning)]) == 0
    assert seen == []
    assert "| 1 | default | this machine's | - | make test's own run |" in report.read_text(
        encoding="utf-8")


def test_reproduce_counts_a_real_nbval_failure(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The real command (pytest --nbval with the sanitize file, one kernel): a wrong stored output
    fails its combination, and the table counts the failed cell."""
    monkeypatch.chdir(ROOT)
    bad = _notebook(tmp_path / "bad.ipynb", "3\n")
    report = tmp_path / "reproduce.md"
    assert reproduce.main(["--combos", "1:default", "--report", str(report), bad]) == 1
    table = report.read_text(encoding="utf-8")
    assert "| 1 | default | this machine's | 1 | 0 | 1 |" in table
    assert "0 of 1 combinations passed" in table
