"""One exception tree, drawn in the module docstring."""

from __future__ import annotations

import signoff.errors as errors
from signoff.errors import MissingExtraError, PolicyError, Problem, SignoffError


def test_every_error_derives_from_signoff_error_and_is_drawn_in_the_docstring():
    classes = [getattr(errors, name) for name in errors.__all__ if name != "Problem"]
    assert all(issubclass(cls, SignoffError) for cls in classes)
    assert errors.__doc__ is not None
    for cls in classes:
        assert cls.__name__ in errors.__doc__


def test_a_policy_error_lists_each_problem_with_its_location():
    error = PolicyError(
        [
            Problem(message="bad glob", path="rules[0].deny", source="p.yaml", line=2, column=9),
            Problem(message="unknown key", path="x"),
        ]
    )
    assert str(error) == "p.yaml:2:9: rules[0].deny: bad glob\n<policy>: x: unknown key"


def test_a_missing_extra_says_how_to_install_it():
    assert str(MissingExtraError("the server", "server")) == (
        "the server needs the 'server' extra: pip install 'signoff[server]'"
    )
    assert isinstance(MissingExtraError("x", "y"), ImportError)
