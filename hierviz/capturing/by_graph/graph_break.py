"""GraphBreak: one place where dynamo stopped a graph, with dynamo's reason and the user's line.

`torch.compile` splits a model at every graph break: the graph traced so far is compiled, the
Python that dynamo could not trace runs eagerly, and tracing resumes after it. Dynamo says why
in its graph-break reason (`torch/_dynamo/exc.py`'s `format_graph_break_message`: the break's
type (`gb_type`), an explanation, hints, a developer context), and where: the user's stack at
the break. `parse_reason` reads those parts out of the text; a reason dynamo gives as a bare
string (`generic_jump TensorVariable()`) keeps its text with no parts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_RESUME = re.compile(r"^torch_dynamo_resume_in_(.+)_at_\d+$")


@dataclass(frozen=True)
class GraphBreak:
    """One graph break, in the order the breaks happened when the model ran.

    `after_graph`: the index (in execution order) of the last graph that ran before the break,
    -1 when none had; `ended_graph`: whether the break ended that graph (False: dynamo had
    traced no op since the last graph, so no graph ends here). `reason` is dynamo's text;
    `gb_type`, `explanation` and `hints` its parts where dynamo gives them ('' / () where not).
    `file`, `line`, `function` and `code` are the user's source line the break is at (the
    innermost frame dynamo traced), `stack` the traced frames outermost first, as
    'file:line in function'."""

    after_graph: int
    ended_graph: bool
    reason: str
    gb_type: str = ""
    explanation: str = ""
    hints: tuple[str, ...] = ()
    file: str = ""
    line: int = 0
    function: str = ""
    code: str = ""
    stack: tuple[str, ...] = ()

    @property
    def location(self) -> str:
        """'file:line' of the break ('' when dynamo gave none)."""
        return f"{self.file}:{self.line}" if self.file else ""

    @property
    def short(self) -> str:
        """A one-line label: the break's type, or the first line of its reason."""
        text = self.gb_type or (self.reason.strip().splitlines() or [""])[0]
        return text if len(text) <= 80 else text[:77] + "..."

    def __str__(self) -> str:
        where = f" at {self.location}" if self.file else ""
        return f"graph break after graph {self.after_graph}{where}: {self.short}"


def parse_reason(text: str) -> tuple[str, str, tuple[str, ...]]:
    """(gb_type, explanation, hints) of a reason in dynamo's graph-break format; ('', '', ())
    for a reason in another form. A break raised while handling another keeps the first's."""
    lines = text.split("*** While handling this graph break", 1)[0].splitlines()
    at = next((k for k in range(1, len(lines)) if lines[k].lstrip().startswith("Explanation:")
               and lines[k - 1].strip()), None)  # dynamo may put a sentence and a blank line first
    if at is None:
        return "", "", ()
    gb_type = lines[at - 1].strip()
    explanation: list[str] = []
    hints: list[list[str]] = []
    current: list[str] | None = None
    for line in lines[at:]:
        stripped = line.strip()
        if stripped.startswith("Explanation:"):
            current = explanation
            current.append(stripped[len("Explanation:"):].strip())
        elif stripped.startswith("Hint:"):
            hints.append([stripped[len("Hint:"):].strip()])
            current = hints[-1]
        elif not stripped or stripped.startswith(("Developer debug context:", "For more details")):
            current = None
        elif current is not None:
            current.append(stripped)
    return gb_type, " ".join(explanation), tuple(" ".join(h) for h in hints)


def is_resumed(name: str) -> bool:
    """Whether a frame's code name is one dynamo made to resume a function after a graph break."""
    return _RESUME.match(name) is not None


def user_function(name: str) -> str:
    """The user's function name for a frame dynamo resumed (`torch_dynamo_resume_in_forward_at_9`
    is `forward`)."""
    match = _RESUME.match(name)
    return match.group(1) if match else name


__all__ = ["GraphBreak", "parse_reason", "user_function", "is_resumed"]
