"""The build settings a Torch-TensorRT error names as its own remedy.

Torch-TensorRT gives some remedies only in words: a float64 constant makes `get_trt_tensor` raise
"TensorRT does not support float64 (double) precision. To resolve this, please set
truncate_double=True in your compilation settings and re-run the model."
(torch_tensorrt/dynamo/conversion/converter_utils.py, 2.14). Its exception has no field for it, so
the words are read here, once, into typed settings: `name=True` or `name=False` where `name` is a
CompilationSettings field that acts at conversion (what part.build() and hv.measure take as
`trt_settings`) and the value is one it takes. A setting of another stage is not offered:
`decompose_attention=True`, which Torch-TensorRT's attention converters suggest, acts in its
lowering, which part.build() does not run again.
"""

from __future__ import annotations

import re
from typing import Any, Mapping

from hierviz.trt.compilation_settings import CONVERSION_FIELDS, FIELDS

_SETTING = re.compile(r"\b([a-z][a-z0-9_]*)=(True|False)\b")


def settings_named(text: str | None) -> dict[str, bool]:
    """The conversion settings `text` (an error's whole text) tells the user to set, by name."""
    named: dict[str, bool] = {}
    for name, word in _SETTING.findall(text or ""):
        value = word == "True"
        if name in CONVERSION_FIELDS and name in FIELDS and FIELDS[name].accepts(value):
            named.setdefault(name, value)
    return named


def settings_to_add(text: str | None, have: Mapping[str, Any] | None) -> dict[str, bool]:
    """Of the settings `text` names, those `have` (the settings built with) does not already
    set to that value (a field it leaves out has Torch-TensorRT's default)."""
    have = have or {}
    return {name: value for name, value in settings_named(text).items()
            if have.get(name, FIELDS[name].default) != value}


__all__ = ["settings_named", "settings_to_add"]
