"""The API's rooms: one router per resource, each its own module, assembled by `create_app`.

- `web`: the inbox's page and files, and what it takes from the config (``/v1/web``);
- `me`: who the request is (``/v1/me``);
- `agents`: the agents that run here (``/v1/agents``);
- `runs`: runs and threads, and their events as server-sent events;
- `changes`, `catalog`, `conversation`: what the inbox reads besides the approvals themselves;
- `approvals`: the approvals and the decisions on them (the WebSocket channel too); the
  decision's short way through the framework is `signoff.server.quick`;
- `policy`, `grants`, `audit`, `insights`;
- `hooks`: coding agents' tool hooks (Claude Code, Gemini CLI).

Beside them, the probes (`signoff.server.probes`), the metrics (`signoff.server.metrics`), Slack's
buttons (`signoff.server.slack`) and sign-on (`signoff.server.sso.routes`) mount their own. Each
route reads what `create_app` keeps on the app through the dependencies of `depends`, and its
principal through `signoff.server.auth.Who`.
"""
