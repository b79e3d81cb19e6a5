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
