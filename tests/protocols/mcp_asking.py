"""An MCP server (the official SDK's `MCPServer`, over stdio) whose tools ask their client's
person in the middle of the call (2025-11-25 elicitation), for the gateway's tests of routing a
server's question to signoff's inbox: ``python mcp_asking.py``.

- ``invoice {customer}`` asks where the customer's invoices go (a form with an email) and
  answers what it was told: ``accepted <email>``, ``declined`` or ``cancelled``;
- ``nested`` asks with a form whose field is an object (outside elicitation's flat subset) and
  answers what came of it;
- ``flood {count}`` asks `count` questions at once and answers how many were declined and how
  many refused (``<n> declined, <m> refused``).
"""

from __future__ import annotations

import asyncio

from mcp.server.mcpserver import Context, MCPServer
from mcp.shared.exceptions import MCPError
from pydantic import BaseModel, Field

server = MCPServer("asking")


class Billing(BaseModel):
    email: str = Field(json_schema_extra={"format": "email"})


@server.tool(structured_output=False)
async def invoice(customer: str, ctx: Context) -> str:
    """Send the customer's invoices where a person says."""
    answer = await ctx.elicit(f"Where do invoices for {customer} go?", Billing)
    if answer.action == "accept":
        return f"accepted {answer.data.email}"
    return {"decline": "declined", "cancel": "cancelled"}[answer.action]


@server.tool(structured_output=False)
async def nested(ctx: Context) -> str:
    """Ask with a form no flat subset holds."""
    schema = {
        "type": "object",
        "properties": {"address": {"type": "object", "properties": {"city": {"type": "string"}}}},
    }
    try:
        answer = await ctx.request_context.session.elicit_form(
            "Where do you live?", schema, related_request_id=ctx.request_id
        )
    except MCPError as exc:
        return f"refused: {exc}"
    return f"answered {answer.action}"


class Agreed(BaseModel):
    ok: bool


@server.tool(structured_output=False)
async def flood(count: int, ctx: Context) -> str:
    """Ask many questions at once."""
    asked = (ctx.elicit(f"Question {n}?", Agreed) for n in range(count))
    answers = await asyncio.gather(*asked, return_exceptions=True)
    declined = sum(getattr(a, "action", None) == "decline" for a in answers)
    refused = sum(isinstance(a, MCPError) for a in answers)
    return f"{declined} declined, {refused} refused"


if __name__ == "__main__":
    server.run("stdio")
