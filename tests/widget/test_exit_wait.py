"""The interpreter's exit settles hierviz's own threads first: a debounced apply running on its
timer thread, and a background job, are waited for, and nothing new starts. A daemon thread
still inside torch's C++ code when Python finalizes aborts the process ("terminate called
without an active exception", exit 134): each script below did so before the exit waited."""

from __future__ import annotations


def test_a_debounced_apply_running_at_exit_finishes_and_the_process_exits_cleanly(run_python, tmp_path) -> None:
    done = tmp_path / "applied.txt"
    proc = run_python(f"""
        import threading, time
        import torch
        from hierviz.widget.debounce import Debouncer

        started = threading.Event()

        def apply():
            started.set()
            end = time.monotonic() + 1.0
            while time.monotonic() < end:  # torch's C++ work while the main thread ends
                a = torch.randn(200, 200)
                (a @ a).sum()
            open({str(done)!r}, "w").write("applied")

        d = Debouncer(0.01, apply)
        d.schedule()  # applied on the timer thread
        assert started.wait(60)
        """)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "terminate called" not in proc.stderr
    assert done.read_text() == "applied"


def test_work_waiting_behind_a_running_job_at_exit_never_starts(run_python, tmp_path) -> None:
    first, second = tmp_path / "first.txt", tmp_path / "second.txt"
    proc = run_python(f"""
        import threading, time
        import torch
        from hierviz.widget.background import BackgroundJob

        started = threading.Event()

        def first():
            started.set()
            end = time.monotonic() + 0.5
            while time.monotonic() < end:
                torch.ones(64, 64) @ torch.ones(64, 64)
            open({str(first)!r}, "w").write("finished")

        def second():
            open({str(second)!r}, "w").write("ran")

        job = BackgroundJob("hierviz-test-job", print)
        job.start(first)
        job.start(second)  # waits for the first
        assert started.wait(60)
        """)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "terminate called" not in proc.stderr
    assert first.read_text() == "finished"
    assert not second.exists()
