"""What the servers behind the gateway offer, under the names its client sees.

With several servers, tools and prompts are named ``<prefix>_<name>`` (the server's
``tool_name_prefix``, else its name), and resources and templates keep their URIs but have their
names prefixed the same way. What the policy denies whatever the arguments is left out. Of two
servers offering one name (or URI), the first's is offered. A read finds its server by its URI:
the server that lists it, or whose template matches it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from mcp import types
from mcp.shared.uri_template import InvalidUriTemplate, UriTemplate

from signoff.policy import PolicyEngine
from signoff.protocols.mcp.upstream import Upstream
from signoff.protocols.mcp.uris import canonical_uri
from signoff.types import CallKind

__all__ = ["Catalog", "Offered", "prompt_schema"]

logger = logging.getLogger("signoff.mcp.gateway")

Listed = list[tuple[Upstream, list[Any]]]
"""What each server listed."""


@dataclass(frozen=True)
class Offered:
    """One thing a server behind offers, under the name the client sees."""

    upstream: Upstream
    item: Any
    """The server's own `Tool`, `Prompt`, `Resource` or `ResourceTemplate` (None for a read of
    a URI no listing names)."""


@dataclass
class Catalog:
    """The offered tools, prompts, resources and templates, as last listed."""

    several: bool
    engine: Callable[[], PolicyEngine]
    tools: dict[str, Offered] = field(default_factory=dict)
    prompts: dict[str, Offered] = field(default_factory=dict)
    resources: dict[str, Offered] = field(default_factory=dict)
    """By canonical URI."""
    templates: list[tuple[UriTemplate, Offered]] = field(default_factory=list)

    def named(self, upstream: Upstream, name: str) -> str:
        prefix = upstream.spec.prefix or (upstream.name if self.several else None)
        return f"{prefix}_{name}" if prefix else name

    def hidden(self, upstream: Upstream, name: str, kind: CallKind) -> bool:
        """Whether the policy denies every call of it, whatever the arguments."""
        return self.engine().fixed_kind(name, server=upstream.name, kind=kind) == "deny"

    def list_tools(self, listed: Listed) -> list[types.Tool]:
        self.tools = self._index(listed, "tool", _name)
        return [self._tool(name, offered) for name, offered in self.tools.items()]

    def list_prompts(self, listed: Listed) -> list[types.Prompt]:
        self.prompts = self._index(listed, "prompt", _name)
        return [_as(o.item, name) for name, o in self.prompts.items()]

    def list_resources(self, listed: Listed) -> list[types.Resource]:
        self.resources = self._index(listed, "resource", _uri)
        return [_as(o.item, self.named(o.upstream, o.item.name)) for o in self.resources.values()]

    def list_templates(self, listed: Listed) -> list[types.ResourceTemplate]:
        templates, offered = [], []
        for upstream, items in listed:
            for item in items:
                try:
                    matcher = UriTemplate.parse(item.uri_template)
                except InvalidUriTemplate as exc:
                    logger.warning("MCP server %r: %s", upstream.name, exc)
                    continue
                templates.append((matcher, Offered(upstream, item)))
                offered.append(_as(item, self.named(upstream, item.name)))
        self.templates = templates
        return offered

    def server_of(self, uri: str) -> Upstream | None:
        """The server of a (canonical) URI: the one that lists it, or whose template matches
        it; None when none does."""
        if uri in self.resources:
            return self.resources[uri].upstream
        for matcher, offered in self.templates:
            if matcher.match(uri) is not None:
                return offered.upstream
        return None

    def template(self, uri_template: str) -> Offered | None:
        return next((o for _, o in self.templates if o.item.uri_template == uri_template), None)

    def _index(
        self, listed: Listed, kind: CallKind, key: Callable[[Any], str]
    ) -> dict[str, Offered]:
        """The offered names (`key` of each item; prefixed, but for a URI) of what the policy
        does not always deny."""
        offered: dict[str, Offered] = {}
        for upstream, items in listed:
            for item in items:
                own = key(item)
                if self.hidden(upstream, own, kind):
                    continue
                name = own if kind == "resource" else self.named(upstream, own)
                if name in offered:
                    logger.warning("two servers offer %s %r: %r's is not offered", kind, name,
                                   upstream.name)  # fmt: skip
                    continue
                offered[name] = Offered(upstream, item)
        return offered

    def _tool(self, name: str, offered: Offered) -> types.Tool:
        """The tool as the client sees it: its name here, none of the server's `_meta`, and
        no output schema when the gateway may answer for it (pending, a person's words)."""
        tool = offered.item
        allowed = self.engine().fixed_kind(tool.name, server=offered.upstream.name) == "allow"
        return types.Tool(
            name=name,
            title=tool.title,
            description=tool.description,
            input_schema=tool.input_schema,
            output_schema=tool.output_schema if allowed else None,
            annotations=tool.annotations,
            icons=tool.icons,
        )


def _as(item: Any, name: str) -> Any:
    """A listed prompt, resource or template under its offered name, none of its `_meta`."""
    return item.model_copy(update={"name": name, "meta": None})


def _name(item: Any) -> str:
    return str(item.name)


def _uri(resource: Any) -> str:
    """A listed resource's URI, as reads of it are judged (as the server wrote it when it has
    no canonical form: a read of it is refused)."""
    try:
        return canonical_uri(str(resource.uri))
    except ValueError:
        return str(resource.uri)


def prompt_schema(prompt: types.Prompt) -> dict[str, Any]:
    """What an edit of a prompt's arguments must fit: text for each argument it declares,
    those it requires present, no others."""
    arguments = prompt.arguments or []
    return {
        "type": "object",
        "properties": {a.name: {"type": "string"} for a in arguments},
        "required": [a.name for a in arguments if a.required],
        "additionalProperties": False,
    }
