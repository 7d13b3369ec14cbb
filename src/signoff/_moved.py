"""Deprecation aliases for public names that moved: the old name keeps working, warns once per
place that calls it (`DeprecationWarning`), and says where the name lives now."""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from typing import Any, TypeVar, cast

F = TypeVar("F", bound=Callable[..., Any])


def moved(old: str, new: str) -> Callable[[F], F]:
    """Wrap `forward`, what `old` does now, so that a call of `old` warns that it is `new`."""

    def alias(forward: F) -> F:
        @functools.wraps(forward)
        def warned(*args: Any, **kwargs: Any) -> Any:
            message = f"{old} is deprecated and will be removed: use {new}"
            warnings.warn(message, DeprecationWarning, stacklevel=2)
            return forward(*args, **kwargs)

        return cast(F, warned)

    return alias
