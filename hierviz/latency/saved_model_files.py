"""The files of a compiled-model folder (deploy.py), each written as data and read so that nothing
in it runs; a missing or damaged one is one error naming it and what to do.

JSON is read as JSON. Tensors are written with `torch.save` and read with
`torch.load(weights_only=True)`: tensors, numbers, strings and plain containers only, so a pickle
that asks for anything else (a crafted file that would run code) is refused by torch before any
of it runs. No other reader opens a file of the folder, except the compile cache's for the saved
artifacts (TensorRT engines as data; TorchInductor's code only when the caller trusts the folder).
"""

from __future__ import annotations

import io
import json
import pickle
from pathlib import Path
from typing import Any

import torch

from hierviz.errors import MeasureError, SavedModelNotFoundError

AGAIN = "save the model again with part.compile().save(folder)"


def missing(path: Path) -> SavedModelNotFoundError:
    return SavedModelNotFoundError(f"{path} is missing: the folder {path.parent} is not a whole saved model; {AGAIN}.",
                                   str(path))


def damaged(path: Path, why: str) -> MeasureError:
    """The error for a file of the folder that cannot be what it should: `why` says how."""
    return MeasureError(f"{path} is damaged ({why}); {AGAIN}.")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:200]}" if text else type(exc).__name__


def read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise missing(path) from None
    except OSError as exc:
        raise damaged(path, f"it cannot be read: {exc.strerror or exc}") from None


def read_json(path: Path) -> Any:
    """The JSON value in `path` (SavedModelNotFoundError when there is no such file)."""
    data = read_bytes(path)
    try:
        return json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise damaged(path, f"not JSON: {_first_line(exc)}") from None


def read_tensors(path: Path) -> Any:
    """The tensors (in plain containers) saved in `path`, read with weights_only=True."""
    data = read_bytes(path)
    try:
        return torch.load(io.BytesIO(data), weights_only=True, map_location="cpu")
    except pickle.UnpicklingError as exc:  # what weights_only refuses: a pickle asking for more than tensors
        raise MeasureError(f"{path} holds more than tensors ({_first_line(exc)}): hierviz reads only tensors from "
                           f"a saved model and ran nothing from it. The file was altered or is not hierviz's; "
                           f"{AGAIN}.") from None
    except (RuntimeError, EOFError, ValueError, TypeError, KeyError, IndexError, AttributeError, OSError) as exc:
        raise damaged(path, f"cut short or not a torch.save file: {_first_line(exc)}") from None


def tensors_as_data(value: Any, what: str) -> bytes:
    """`value` as `torch.save` bytes that weights_only=True reads back; MeasureError naming
    `what` when it holds something else (an object that only an unrestricted pickle would make)."""
    buffer = io.BytesIO()
    try:
        torch.save(value, buffer)
        torch.load(io.BytesIO(buffer.getvalue()), weights_only=True, map_location="cpu")
    except (pickle.PicklingError, pickle.UnpicklingError, TypeError, AttributeError, RuntimeError) as exc:
        raise MeasureError(f"{what} cannot be saved as data ({_first_line(exc)}): a saved model holds tensors, "
                           "numbers, strings, lists, tuples and dicts only.") from None
    return buffer.getvalue()


def write(path: Path, data: bytes | str) -> None:
    try:
        if isinstance(data, str):
            path.write_text(data, encoding="utf-8")
        else:
            path.write_bytes(data)
    except OSError as exc:
        raise MeasureError(f"cannot write {path}: {exc.strerror or exc}") from None


__all__ = ["read_json", "read_tensors", "read_bytes", "tensors_as_data", "write", "missing", "damaged", "AGAIN"]
