"""The edit form's generator in the browser, on schemas the demo's tools do not have: what it
reads back is what the server gets."""

from __future__ import annotations

from typing import Any

from playwright.sync_api import Page

from signoff.redaction import MASK

# Builds a form in the page for `schema` and `value`, lets `act` change it, reads it back.
FORM = """async ([schema, value, act]) => {
  const { schemaForm } = await import("/ui/schemaform.js");
  const form = schemaForm(schema, value);
  document.body.replaceChildren(form.element);
  const field = (path) => document.querySelector(`[data-path='${path}']`);
  if (act) new Function("field", act)(field);
  const shown = form.showError("/items/1/name", "bad name");
  const marked = [...document.querySelectorAll(".field.invalid")].map((f) => f.dataset.path);
  return { value: form.read(), shown, marked };
}"""


def form(page: Page, url: str, schema: dict[str, Any], value: Any, act: str = "") -> Any:
    page.goto(f"{url}/v1/health")  # a page of this origin with no app running
    return page.evaluate(FORM, [schema, value, act])


ITEMS = {
    "type": "object",
    "properties": {
        "items": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"name": {"type": "string"}},
                "required": ["name"],
            },
        }
    },
    "required": ["items"],
}


def test_removing_a_row_renumbers_the_rest(page: Page, demo_url: str):
    removed = form(
        page,
        demo_url,
        ITEMS,
        {"items": [{"name": "a"}, {"name": "b"}, {"name": "c"}]},
        "field('/items/0').parentElement.querySelector('button.remove').click()",
    )
    assert removed["value"] == {"items": [{"name": "b"}, {"name": "c"}]}
    # The server's error for /items/1 lands on the row now second: "c".
    assert removed["shown"] is True
    assert removed["marked"] == ["/items/1/name"]


def test_a_required_nullable_value_unticked_is_null_and_a_kept_secret_stays_masked(
    page: Page, demo_url: str
):
    schema = {
        "type": "object",
        "properties": {
            "note": {"anyOf": [{"type": "string"}, {"type": "null"}]},
            "pin": {"type": "integer"},
            "admin": {"type": "boolean"},
            "limit": {"type": "integer", "default": 5},
        },
        "required": ["note", "pin", "admin"],
    }
    got = form(
        page,
        demo_url,
        schema,
        {"note": "hi", "pin": MASK, "admin": MASK},
        "field('/note').querySelector('input.include').click()",
    )
    # Unticked: null (the key is required); the masked integer and boolean are sent back as
    # masks, which the server replaces with the originals; the untouched default is left out.
    assert got["value"] == {"note": None, "pin": MASK, "admin": MASK}


def test_a_schema_that_refers_to_itself_edits_as_json_below_a_depth(page: Page, demo_url: str):
    tree = {
        "$defs": {
            "Node": {
                "type": "object",
                "properties": {
                    "label": {"type": "string"},
                    "child": {"anyOf": [{"$ref": "#/$defs/Node"}, {"type": "null"}]},
                },
                "required": ["label"],
            }
        },
        "$ref": "#/$defs/Node",
    }
    value = {"label": "root", "child": {"label": "leaf", "child": None}}
    got = form(page, demo_url, tree, value)
    assert got["value"] == value
