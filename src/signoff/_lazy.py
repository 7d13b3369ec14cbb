"""Names a package exports but imports only when first asked for: `import signoff` and the
``signoff`` command stay light, and SQLAlchemy, pydantic or YAML load with what needs them."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(package: str, names: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for `package`: each of `names` imported from the module it maps
    to on first use, then kept in the package, so it is looked up once."""

    def __getattr__(name: str) -> Any:
        if name not in names:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(names[name]), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
