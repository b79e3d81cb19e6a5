"""No decision on a message's words: what an error or a refusal says is for people, and a branch
that reads it breaks when the words change. Whether TorchInductor itself refuses an op is
`Refusal.by_inductor`, whether an error line was cut is `EngineBuild.error_cut`; this check
walks hierviz's source for a `startswith`/`endswith` on an error or a why (`error`, `why`,
`x.error`, `x.why`) and for a test of error_line's cut mark, as the code did before."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "hierviz"
MESSAGES = {"error", "why"}  # the names hierviz gives a failure's text or a refusal's reason
TESTS = {"startswith", "endswith"}
CUT_MARK = "\u2026"


def _name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def text_decisions(source: str) -> list[str]:
    """Each `startswith`/`endswith` in `source` on a message (MESSAGES), or for the cut mark."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in TESTS):
            continue
        on_message = _name(node.func.value) in MESSAGES
        for_cut = any(isinstance(a, ast.Constant) and a.value == CUT_MARK for a in node.args)
        if on_message or for_cut:
            found.append(f"line {node.lineno}: {ast.unparse(node)}")
    return found


def test_the_check_finds_a_decision_on_message_text() -> None:
    assert text_decisions('if why.startswith("TorchInductor cannot"):\n    pass\n')
    assert text_decisions('cut = row.error.endswith("x")\n')
    assert text_decisions('cut = text.endswith("\u2026")\n')
    assert not text_decisions('if name.startswith("torch.ops."):\n    pass\n')


def test_no_hierviz_module_decides_on_message_text() -> None:
    found = {str(path.relative_to(PACKAGE.parent)): hits for path in sorted(PACKAGE.rglob("*.py"))
             if (hits := text_decisions(path.read_text(encoding="utf-8")))}
    assert found == {}, found
