"""The CPU priority of this process's compiler subprocesses (hierviz/cpu_priority.py): a change
the Explorer begins lowers them (children and their children), leaves other processes alone,
and lowers nothing when turned off."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from hierviz import cpu_priority, foreground

linux = pytest.mark.skipif(not sys.platform.startswith("linux") or not Path(f"/proc/{os.getpid()}/task").exists(),
                           reason="reads the process tree from /proc")


@pytest.fixture
def processes():
    started: list[subprocess.Popen] = []

    def start(*command: str) -> subprocess.Popen:
        p = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL)
        started.append(p)
        return p

    yield start
    for p in started:
        p.kill()
        p.wait()


def wait_for_child(parent: int, name: str) -> int:
    for _ in range(1000):  # until the shell has started it (bounded: no timing asserted)
        found = [pid for pid in cpu_priority.descendants(parent) if cpu_priority.command_name(pid) == name]
        if found:
            return found[0]
        os.sched_yield()
        subprocess.run(["true"])
    raise AssertionError(f"{name} never started under {parent}")


@linux
def test_named_descendants_are_lowered_and_others_left_alone(processes) -> None:
    usual = os.getpriority(os.PRIO_PROCESS, 0)
    shell = processes("sh", "-c", "sleep 600; :")  # the shell waits for its child: a grandchild of this process
    sleeper = wait_for_child(shell.pid, "sleep")
    other = processes("cat")
    assert sleeper in cpu_priority.descendants(os.getpid()) and other.pid in cpu_priority.descendants(os.getpid())
    assert cpu_priority.lower_compilers(names={"sleep"}) == [sleeper]
    assert os.getpriority(os.PRIO_PROCESS, sleeper) == cpu_priority.LOWEST
    assert os.getpriority(os.PRIO_PROCESS, shell.pid) == os.getpriority(os.PRIO_PROCESS, other.pid) == usual
    assert cpu_priority.lower_compilers() == []  # no compiler among them
    assert cpu_priority.command_name(2**22 + 7) is None and cpu_priority.descendants(2**22 + 7) == []


def test_a_process_that_is_gone_or_not_ours_is_skipped(monkeypatch) -> None:
    monkeypatch.setattr(cpu_priority, "descendants", lambda pid: [11, 12, 13])
    monkeypatch.setattr(cpu_priority, "command_name", {11: "cc1plus", 12: "python", 13: "g++"}.get)

    def set_priority(which: int, pid: int, value: int) -> None:
        if pid == 11:
            raise ProcessLookupError(pid)  # exited meanwhile
        assert (which, value) == (os.PRIO_PROCESS, cpu_priority.LOWEST)

    assert cpu_priority.lower_compilers(set_priority=set_priority) == [13]
    monkeypatch.setattr(cpu_priority, "ENABLED", False)
    assert cpu_priority.lower_compilers(set_priority=set_priority) == []


def test_a_change_lowers_the_compilers_before_it_is_applied_and_once_when_nested(monkeypatch) -> None:
    calls: list[str] = []
    monkeypatch.setattr(foreground, "lower_compilers", lambda: calls.append("lowered"))
    with foreground.foreground():
        calls.append("change applied")
        with foreground.foreground():
            calls.append("nested")
    assert calls == ["lowered", "change applied", "nested"]
    monkeypatch.setattr(foreground, "ENABLED", False)
    with foreground.foreground():
        calls.append("gate off")
    assert calls[-1] == "gate off" and calls.count("lowered") == 1
