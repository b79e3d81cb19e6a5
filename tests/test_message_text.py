"""No decision on a message's words: what an error, a warning or a refusal says is for people, and
a branch that reads it breaks when the words change. Whether TorchInductor itself refuses an op is
`Refusal.by_inductor`, whether an error line was cut is `EngineBuild.error_cut`, the setting a
ConfigError's message starts with is `ConfigError.setting`, the source op that forced a node is
`NodeTable.forced_from`; this check walks hierviz's source for a `startswith`/`endswith` or an
`in` test on a message (a name such as `error`, `why`, `message`, `text`, `w` of `x.warnings`, or
`str(exc)`) and for a test of error_line's cut mark, as the code did before.

Texts that other software writes (torch's and TensorRT's error messages) have no typed field to
read instead: the few places that classify them, and the one that ends a sentence once, are listed
in READ_ON_PURPOSE with what they read (an entry no longer in the code fails too)."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "hierviz"
# the names hierviz gives a failure's text, a refusal's reason or a warning
MESSAGES = {"error", "why", "message", "msg", "text", "warning", "note", "reason", "starts", "w"}
TESTS = {"startswith", "endswith"}
CUT_MARK = "\u2026"
EXCEPTIONS = {"e", "exc", "err", "error", "exception", "message"}  # str() of these is a message
# (module, the decision as ast.unparse writes it) -> whose text it reads, and why
READ_ON_PURPOSE = {
    ("hierviz/capturing/export_failure.py", "'unsupported' in text"): "torch.export's exception",
    ("hierviz/capturing/export_failure.py", "'not implemented' in text"): "torch.export's exception",
    ("hierviz/capturing/by_graph/dynamo_capture.py", "text.startswith(_WRAPPED)"): "torch._dynamo's exception",
    ("hierviz/foundation/error_text.py", "'Myelin' in error"): "TensorRT's error line",
    ("hierviz/building/reduction.py", "long.text.startswith(short.text + ' ')"): "TensorRT's error line, "
    "compared with itself cut (the cut is typed: ErrorLine.cut)",
    ("hierviz/cli/commands.py", "text.endswith(('.', '?', '!'))"): "presentation: a message's sentence ends once",
}


def _name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _is_message(node: ast.expr) -> bool:
    """A message: a name or attribute in MESSAGES, or `str(...)` of an exception or a message."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "str" and node.args:
        return _name(node.args[0]) in EXCEPTIONS
    return _name(node) in MESSAGES


def text_decisions(source: str) -> list[str]:
    """Each `startswith`/`endswith` or `"words" in` on a message in `source`, or a test for the cut mark."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in TESTS:
            for_cut = any(isinstance(a, ast.Constant) and a.value == CUT_MARK for a in node.args)
            if _is_message(node.func.value) or for_cut:
                found.append(ast.unparse(node))
        elif isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], (ast.In, ast.NotIn)):
            words = isinstance(node.left, ast.Constant) and isinstance(node.left.value, str)
            if words and _is_message(node.comparators[0]):
                found.append(ast.unparse(node))
    return found


def test_the_check_finds_a_decision_on_message_text() -> None:
    assert text_decisions('if why.startswith("TorchInductor cannot"):\n    pass\n')
    assert text_decisions('cut = row.error.endswith("x")\n')
    assert text_decisions('cut = text.endswith("\u2026")\n')
    assert text_decisions('if "not written" in w:\n    pass\n')
    assert text_decisions('kept = [w for w in split.warnings if "differ" not in w]\n')
    assert text_decisions('if str(exc).startswith("--priority"):\n    pass\n')
    assert text_decisions('if "Ray worker" in str(error):\n    pass\n')
    assert text_decisions('if message.startswith(row.option):\n    pass\n')
    assert not text_decisions('if name.startswith("torch.ops."):\n    pass\n')
    assert not text_decisions('if "aten" in op:\n    pass\n')
    assert not text_decisions('if key in message:\n    pass\n')
    assert not text_decisions('if str(node.target).startswith("_guards_fn"):\n    pass\n')


def test_no_hierviz_module_decides_on_message_text() -> None:
    found = {(str(path.relative_to(PACKAGE.parent)), hit) for path in sorted(PACKAGE.rglob("*.py"))
             for hit in text_decisions(path.read_text(encoding="utf-8"))}
    assert sorted(found - set(READ_ON_PURPOSE)) == []
    assert sorted(set(READ_ON_PURPOSE) - found) == [], "a READ_ON_PURPOSE entry is no longer in the code: drop it"
