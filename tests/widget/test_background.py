"""The Explorer's background jobs end cleanly with the interpreter: a job still running at exit
is waited for, so no thread is stopped inside torch's C++ code (which aborts the process)."""

from __future__ import annotations


def test_a_job_running_at_exit_finishes_and_the_process_exits_cleanly(run_python, tmp_path) -> None:
    done = tmp_path / "done.txt"
    proc = run_python(f"""
        import time
        import torch
        from hierviz.widget.background import BackgroundJob

        def work():
            time.sleep(0.5)
            torch.ones(64, 64) @ torch.ones(64, 64)  # C++ work after the main thread returned
            open({str(done)!r}, "w").write("finished")

        BackgroundJob("hierviz-test-job", print).start(work)
        """)  # the main thread ends at once
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "terminate called" not in proc.stderr
    assert done.read_text() == "finished"


def test_a_failed_job_reports_its_error_and_does_not_hold_up_exit(run_python) -> None:
    proc = run_python("""
        from hierviz.widget.background import BackgroundJob

        def work():
            raise ValueError("broken work")

        job = BackgroundJob("hierviz-test-job", lambda exc: print("reported:", exc))
        job.start(work).join()
        """)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip().splitlines()[-1] == "reported: broken work"


def test_one_run_at_a_time_and_only_the_latest_waiting_work_runs() -> None:
    """Three starts while a run goes: no second thread; the last one runs after it, the middle
    one (replaced) never does."""
    import threading

    from hierviz.widget.background import BackgroundJob

    gate, ran, threads = threading.Event(), [], set()

    def work(name: str):
        def run() -> None:
            threads.add(threading.current_thread().ident)
            assert len(threads) == 1
            if name == "first":
                gate.wait(10)
            ran.append(name)
        return run

    job = BackgroundJob("hierviz-test-job", print)
    job.start(work("first"))
    job.start(work("second"))
    job.start(work("third"))
    assert job.running
    gate.set()
    assert job.wait(10) and not job.running
    assert ran == ["first", "third"] and job.runs == 2


def test_importing_the_module_starts_no_thread(run_python) -> None:
    proc = run_python("""
        import threading
        before = threading.active_count()
        import hierviz.widget.background
        import hierviz.widget.explorer
        print(threading.active_count() - before, [t.name for t in threading.enumerate()])
        """)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split()[0] == "0", proc.stdout


def test_closing_drops_the_waiting_work_and_starts_none() -> None:
    """What the Explorer's close does to its jobs: the run going ends as its work does; the work
    waiting behind it, and any started later, never runs."""
    import threading

    from hierviz.widget.background import BackgroundJob

    gate, ran = threading.Event(), []

    def work(name: str):
        def run() -> None:
            if name == "running":
                assert gate.wait(60)
            ran.append(name)
        return run

    job = BackgroundJob("hierviz-test-job", print)
    first = job.start(work("running"))
    job.start(work("waiting"))
    job.close()
    gate.set()
    first.join(60)
    job.start(work("after close")).join(60)
    assert ran == ["running"] and not job.running
