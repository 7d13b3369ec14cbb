"""Public names that moved keep working, deprecated: each warns where it is called and does what
the name it moved to does."""

from __future__ import annotations

import pytest

from signoff._moved import moved


def test_a_moved_name_warns_where_it_is_called_and_forwards() -> None:
    @moved("Old.thing", "new.thing")
    def thing(a: int, *, b: int) -> int:
        return a + b

    with pytest.warns(
        DeprecationWarning, match=r"Old\.thing is deprecated .* use new\.thing"
    ) as seen:
        assert thing(1, b=2) == 3
    assert seen[0].filename == __file__


def test_the_langgraph_gate_s_interrupt_methods_are_the_interrupt_s_functions() -> None:
    pytest.importorskip("langgraph")
    from signoff.integrations.langgraph import LangGraphGate, interrupt

    for name in ("decide_turn", "adecide_turn", "pause", "take"):
        assert getattr(LangGraphGate, name).__wrapped__ is getattr(interrupt, name)


@pytest.mark.parametrize(
    ("module", "names"),
    [
        ("signoff.integrations.agno", ("guarded", "execute")),
        ("signoff.integrations.openai_agents", ("asks", "execute", "register")),
    ],
)
def test_an_agent_s_per_call_methods_stay_deprecated(module: str, names: tuple[str, ...]) -> None:
    agent = pytest.importorskip(module).SignoffAgent
    for name in names:
        assert callable(getattr(agent, name)) and hasattr(getattr(agent, name), "__wrapped__")
