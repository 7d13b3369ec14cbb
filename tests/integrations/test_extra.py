"""`needs`: an adapter's package imported without its framework says which extra installs it."""

from __future__ import annotations

import pytest

from signoff.errors import MissingExtraError
from signoff.integrations._extra import needs


def test_a_framework_that_is_not_installed_names_the_extra_that_installs_it() -> None:
    with pytest.raises(MissingExtraError) as caught, needs("signoff.integrations.x", "x-ai"):
        import signoff_test_no_such_framework  # type: ignore[import-not-found]  # noqa: F401
    assert str(caught.value) == (
        "signoff.integrations.x needs the 'x-ai' extra: pip install 'signoff[x-ai]'"
    )
    assert isinstance(caught.value.__cause__, ModuleNotFoundError)


def test_an_installed_framework_imports_as_it_is() -> None:
    with needs("signoff.integrations.x", "x-ai"):
        import json
    assert json.dumps([]) == "[]"
