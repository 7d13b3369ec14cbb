"""A question on the Streamlit channel (driven by `AppTest`, on each store through the Python API):
its text and choices or form shown, answered through the gate — a misfit field named, a second
answer refused naming who gave the first."""

from __future__ import annotations

from typing import Any

from signoff import Answer, Policy, ToolCall
from signoff.gate import Gate
from signoff.store import open_store
from tests.channels.test_streamlit import inbox, run, shown

QUESTIONS = Policy.from_dict({"rules": [{"ask": {"question": "*"}, "approvers": ["ops"]}]})


async def asked(url: str, **args: Any) -> str:
    """Hold a question asking `args`; its approval's id."""
    question = ToolCall(id="q1", name="ask_person", args=args, kind="question")
    async with open_store(url) as store:
        [held] = await Gate(QUESTIONS, store).check([question])
    assert held.approval is not None
    return held.approval.id


async def test_a_choice_is_answered_in_the_app_and_a_second_answer_names_who_gave_the_first(
    store_url: str,
):
    from signoff.channels.streamlit import LocalStore

    held = await asked(store_url, question="Which region?", choices=["eu-west", "us-east"])
    olga = await run(inbox(LocalStore(store_url, actor="olga", roles=["ops"]), refresh=None))
    carla = await run(inbox(LocalStore(store_url, actor="carla", roles=["ops"]), refresh=None))
    assert "**Question:** Which region?" in shown(olga)
    assert olga.radio(key=f"signoff:{held}:reply").options == ["eu-west", "us-east"]
    assert not olga.code  # the question, not its arguments as JSON

    olga.radio(key=f"signoff:{held}:reply").set_value("us-east")
    olga = await run(olga.button(key=f"signoff:{held}:answer").click())
    assert [s.value for s in olga.success] == ["Answered ask_person, as olga."]

    carla.radio(key=f"signoff:{held}:reply").set_value("eu-west")
    carla = await run(carla.button(key=f"signoff:{held}:answer").click())
    [error] = carla.error
    assert "already answered by 'olga'" in error.value
    async with open_store(store_url) as store:
        approval = await store.get_approval(held)
    assert (approval.decided_by, approval.decision) == ("olga", Answer(value="us-east"))


async def test_a_form_s_misfit_field_is_named_on_the_card_and_a_fitting_answer_is_taken(
    store_url: str,
):
    from signoff.channels.streamlit import LocalStore

    form = {
        "type": "object",
        "properties": {
            "email": {"type": "string", "format": "email", "title": "Billing email"},
            "plan": {"type": "string", "oneOf": [{"const": "pro", "title": "Pro plan"},
                                                 {"const": "team", "title": "Team plan"}]},
            "seats": {"type": "integer", "minimum": 1},
            "urgent": {"type": "boolean"},
        },
        "required": ["email"],
    }  # fmt: skip
    held = await asked(store_url, question="Who pays?", schema=form)
    app = await run(inbox(LocalStore(store_url, actor="olga", roles=["ops"]), refresh=None))
    at = f"signoff:{held}:form"
    assert app.text_input(key=f"{at}:email").label == "Billing email *"
    assert app.selectbox(key=f"{at}:plan").options == ["Pro plan", "Team plan"]

    app.text_input(key=f"{at}:email").input("ap at example")
    app.selectbox(key=f"{at}:plan").set_value("team")
    app.number_input(key=f"{at}:seats").set_value(3)
    app.checkbox(key=f"{at}:urgent").check()
    app = await run(app.button(key=f"signoff:{held}:answer").click())
    [error] = app.error
    assert error.value == "Not decided: answer.email: not an email"

    app.text_input(key=f"{at}:email").input("ap@example.com")
    app = await run(app.button(key=f"signoff:{held}:answer").click())
    assert not app.error
    async with open_store(store_url) as store:
        approval = await store.get_approval(held)
    value = {"email": "ap@example.com", "plan": "team", "seats": 3, "urgent": True}
    assert (approval.decided_by, approval.decision) == ("olga", Answer(value=value))
