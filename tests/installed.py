"""A program from Debian that some tests drive (Prometheus, Spin, libfaketime): its path, or the
test skipped with how to get it — failed under CI, where `make test` unpacks it."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import NoReturn

import pytest

__all__ = ["DEBIAN", "library", "program"]

# Where `make test` unpacks Debian's packages (apt-get download, dpkg-deb -x): nothing installed.
DEBIAN = Path(__file__).resolve().parent.parent / ".tools" / "debian"


def program(name: str, package: str | None = None) -> str:
    found = shutil.which(name, path=str(DEBIAN / "usr" / "bin")) or shutil.which(name)
    if found:
        return found
    return missing(name, package or name)


def library(name: str, package: str) -> str:
    """A shared library of a Debian package, as `make test` unpacked it or the machine has it."""
    for root in (DEBIAN, Path("/")):
        found = sorted((root / "usr" / "lib").glob(f"*/{name}"))
        if found:
            return str(found[0])
    return missing(name, package)


def missing(name: str, package: str) -> NoReturn:
    if os.environ.get("CI"):
        pytest.fail(f"{name} is missing: `make test` unpacks Debian's {package} package")
    pytest.skip(f"no {name} on this machine (`make test` unpacks Debian's {package} package)")
