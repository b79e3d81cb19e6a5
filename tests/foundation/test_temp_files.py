"""Temp files name their writer (hierviz.foundation.temp_files): one left by a writer that is gone
is stale once untouched for minutes; one of a writer still running is never stale, however old;
one of another machine, or of an older hierviz that did not name its writer, goes by its age."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from hierviz.foundation import temp_files


@pytest.fixture
def ended_pid() -> int:
    """The pid of a process that has ended (and been reaped)."""
    proc = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                          check=True)
    return int(proc.stdout)


@pytest.fixture
def running_pid():
    """The pid of another process, running until the test ends."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    yield proc.pid
    proc.kill()
    proc.wait()


def _file(folder, name: str, age_s: float = 0.0):
    path = folder / name
    path.write_bytes(b"half an entry")
    when = time.time() - age_s
    os.utime(path, (when, when))
    return path


OLD = temp_files.STALE_S + 60


def test_this_process_names_its_temp_files_and_they_are_never_stale(tmp_path) -> None:
    fd, name = temp_files.make(tmp_path, ".capture")
    os.close(fd)
    assert temp_files.writer_of(os.path.basename(name)).pid == os.getpid()
    assert name.endswith(".capture") and os.path.basename(name).startswith(temp_files.prefix())
    when = time.time() - OLD
    os.utime(name, (when, when))
    assert not temp_files.stale(tmp_path / os.path.basename(name))  # its writer runs: it is still writing


def test_an_old_temp_file_of_a_writer_that_ended_is_stale_a_running_ones_is_not(tmp_path, ended_pid,
                                                                              running_pid) -> None:
    left = _file(tmp_path, f"{temp_files.prefix(ended_pid)}abc.engine", OLD)
    writing = _file(tmp_path, f"{temp_files.prefix(running_pid)}abc.engine", OLD)
    just_left = _file(tmp_path, f"{temp_files.prefix(ended_pid)}def.engine")
    assert [temp_files.stale(p) for p in (left, writing, just_left)] == [True, False, False]
    assert temp_files.survey(temp_files.temp_paths(tmp_path)) == temp_files.Survey(3, 3 * 13, 1)
    assert temp_files.sweep(temp_files.temp_paths(tmp_path)) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([writing.name, just_left.name])


def test_a_temp_file_of_another_machine_or_an_older_hierviz_goes_by_its_age(tmp_path, running_pid) -> None:
    elsewhere = f"{temp_files.PREFIX}00000000-{running_pid}-abc"  # a pid running here means nothing there
    assert temp_files.writer_of(elsewhere).host != temp_files.writer_of(temp_files.prefix()).host
    old = [_file(tmp_path, elsewhere, OLD), _file(tmp_path, ".tmp-k2j3h4.capture", OLD)]
    fresh = [_file(tmp_path, elsewhere + "2"), _file(tmp_path, ".tmp-q9w8e7.capture")]
    assert [temp_files.stale(p) for p in old + fresh] == [True, True, False, False]


def test_a_temp_file_far_older_than_any_write_is_stale_whatever_holds_its_pid_now(tmp_path, running_pid) -> None:
    path = _file(tmp_path, f"{temp_files.prefix(running_pid)}abc", temp_files.ABANDONED_S + 60)
    assert temp_files.stale(path)


def test_a_process_killed_and_not_yet_reaped_is_not_running() -> None:
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        assert temp_files.running(proc.pid)
        proc.kill()
        end = time.monotonic() + 60
        while temp_files.running(proc.pid):  # a zombie until waited for
            assert time.monotonic() < end, "the killed process never ended"
            time.sleep(0.01)
        assert proc.poll() is not None
    finally:
        proc.kill()
        proc.wait()
