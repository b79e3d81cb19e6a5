"""What the Explorer says about one result of one setting (a measurement, the engines built,
a numerics check): not asked, running (with its stage), done, or failed (with its error), in
the same words in every panel."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class State(Enum):
    NOT_ASKED = "not asked"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"


# what each kind of result is called while it runs and once it is done
DOING = {"measurement": ("measuring", "measured"), "build": ("building the TensorRT engines", "built"),
         "numerics": ("checking numerics", "checked"), "compile_today": ("computing", "computed"),
         "search": ("searching", "searched")}


@dataclass(frozen=True)
class Status:
    """A result's state for one setting; `stage` says how far a running one is, `error` why a
    failed one failed."""

    kind: str
    state: State = State.NOT_ASKED
    stage: str = ""
    error: str = ""

    def words(self) -> str:
        """'measuring ... (stage)', 'measured', 'failed: <error>' or 'not asked'."""
        doing, done = DOING.get(self.kind, (self.kind, "done"))
        if self.state is State.RUNNING:
            return f"{doing} ..." + (f" ({self.stage})" if self.stage else "")
        if self.state is State.FAILED:
            return f"failed: {self.error}"
        if self.state is State.DONE:
            return done
        return "not asked"


__all__ = ["DOING", "State", "Status"]
