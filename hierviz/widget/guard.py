"""Guarding a widget's callbacks: no exception a callback raises reaches the kernel.

A `HiervizError` is the user's to read: its message is handed to `show`. Anything else is a
bug of hierviz: it is logged, kept in `internal_errors`, and handed to `show` as "unexpected
<type>: <message>" with its traceback. The Explorer and the GraphsExplorer wrap every observer,
button handler and timer callback with `guarded`.
"""

from __future__ import annotations

import logging
import traceback
from typing import Any, Callable

from hierviz.errors import HiervizError

logger = logging.getLogger(__name__)


def internal_message(exc: BaseException) -> str:
    """What a widget shows for a bug: its type, its message and its traceback."""
    return (f"unexpected {type(exc).__name__}: {exc}\n"
            + "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)))


def guarded(fn: Callable[..., Any], who: str, internal_errors: list[BaseException],
            show: Callable[[str, bool], None], *, succeeded: Callable[[], None] | None = None,
            after: Callable[[], None] | None = None) -> Callable[..., Any]:
    """`fn` that never raises: `show(message, internal)` is told of an error (internal: a bug,
    not a HiervizError); `succeeded()` runs when `fn` returned; `after()` runs in every case,
    and an error of its own is logged and kept, never raised. `who` names the widget in the log."""
    name = getattr(fn, "__name__", "callback")

    def call(*args: Any, **kwargs: Any) -> Any:
        result = None
        try:
            result = fn(*args, **kwargs)
        except HiervizError as exc:
            show(str(exc), False)
        except Exception as exc:  # a widget callback: the kernel must never see it; shown, kept and logged
            logger.error("a %s callback (%s) failed", who, name, exc_info=True)
            internal_errors.append(exc)
            show(internal_message(exc), True)
        else:
            if succeeded is not None:
                succeeded()
        if after is not None:
            try:
                after()
            except Exception as exc:  # the error area itself failed: kept and logged, never raised
                logger.error("the %s's error area could not be shown", who, exc_info=True)
                internal_errors.append(exc)
        return result

    call.__name__ = name
    return call


__all__ = ["guarded", "internal_message"]
