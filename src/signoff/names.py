"""One person, one name: how signoff tells whether two names are the same person's.

A name comes from the config (a token's principal) or from the identity provider (a claim of the
person who signs in). It is kept and shown as it was given, and compared by its `name_key` —
NFKC, case-folded, NFKC again (Unicode's compatibility caseless match) — wherever people are
compared: four eyes, self-approval, assignment, grants and reserved names. ``Mallory``,
``mallory`` and ``mallory`` in full-width letters are one person.

A name that could pass for another is refused where it enters (`name_refusal`): white space
around it, control characters, invisible ones (format characters such as the zero-width space
and the bidirectional marks, and the other default-ignorable code points such as variation
selectors and Hangul fillers), line and paragraph separators, and a name that reads as an
assignment to a role (``role:NAME``). A name no person may take (the automatic decider's, a
machine's) is compared by its key like any other.

Pure and without I/O: the gate, the policy and the server import it alike.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

__all__ = ["MAX_NAME", "ROLE_PREFIX", "assignee_key", "name_key", "name_refusal", "same_person"]

MAX_NAME = 200
"""The most characters a person's name may have."""
ROLE_PREFIX = "role:"
"""What begins an assignment to everyone with a role, rather than to one person."""

_REFUSED_CATEGORIES = {
    "Cc": "a control character",
    "Cf": "an invisible formatting character",
    "Cs": "a lone surrogate",
    "Co": "a private-use character",
    "Cn": "an unassigned code point",
    "Zl": "a line separator",
    "Zp": "a paragraph separator",
}
# Default-ignorable code points outside the C categories (Unicode's DerivedCoreProperties):
# combining grapheme joiner, Hangul fillers, Khmer inherent vowels, variation selectors.
_IGNORABLE = re.compile(
    "[\u034f\u115f\u1160\u17b4\u17b5\u180b-\u180d\u180f\u3164\ufe00-\ufe0f\uffa0"
    "\U000e0100-\U000e01ef]"
)


@lru_cache(maxsize=4096)
def name_key(name: str) -> str:
    """What `name` is compared by: two names with the same key are one person's."""
    return unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", name).casefold())


def same_person(a: str | None, b: str | None) -> bool:
    """Whether `a` and `b` name the same person; never when either is unknown (None)."""
    return a is not None and b is not None and name_key(a) == name_key(b)


def assignee_key(to: str) -> str:
    """What an assignment to `to` is found by: a person's `name_key`, or ``role:NAME`` as
    given (roles are the config's own words, compared exactly, as rules' approvers are)."""
    return to if to.startswith(ROLE_PREFIX) else name_key(to)


@lru_cache(maxsize=4096)
def name_refusal(name: str) -> str | None:
    """Why `name` cannot name a person, or None when it can (see the module's docstring): a
    phrase naming `name` and what is wrong with it (an offending character by its code point
    and Unicode name), for the caller to say what to do."""
    if not name:
        return "the name is empty"
    if len(name) > MAX_NAME:
        return f"{_shown(name)} is longer than {MAX_NAME} characters ({len(name)})"
    for text in (name, unicodedata.normalize("NFKC", name)):
        if text != text.strip():
            return f"{_shown(name)} has white space around it"
        for character in text:
            problem = _character_problem(character)
            if problem is not None:
                return (
                    f"{_shown(name)} has {problem} ({_code_point(character)}), which would "
                    "let it pass for another name"
                )
    if name_key(name).startswith(ROLE_PREFIX):
        return f"{_shown(name)} reads as an assignment to a role ({ROLE_PREFIX}NAME)"
    return None


def _character_problem(character: str) -> str | None:
    category = unicodedata.category(character)
    if category in _REFUSED_CATEGORIES:
        return _REFUSED_CATEGORIES[category]
    if _IGNORABLE.match(character):
        return "an invisible character"
    return None


def _code_point(character: str) -> str:
    described = unicodedata.name(character, "")
    return f"U+{ord(character):04X} {described}".rstrip()


def _shown(name: str) -> str:
    """`name` as a message quotes it: escaped, and cut when long."""
    return repr(name[:64] + ("…" if len(name) > 64 else ""))
