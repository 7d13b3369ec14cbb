"""Microsoft Agent Framework agents behind signoff: ``SignoffAgent(my_agent, connect(policy,
origin="agent-framework"))``, whose `SignoffMiddleware` judges each call and whose threads'
sessions signoff keeps (docs/integrations/agent-framework.md)."""

from signoff.errors import MissingExtraError
from signoff.gate.external import connect

try:  # the framework is imported by the parts below
    from signoff.integrations.agent_framework.agent import ORIGIN, SignoffAgent
    from signoff.integrations.agent_framework.middleware import SignoffMiddleware
except ImportError as exc:  # pragma: no cover - exercised without the extra installed
    raise MissingExtraError("signoff.integrations.agent_framework", "agent-framework") from exc

__all__ = ["ORIGIN", "SignoffAgent", "SignoffMiddleware", "connect"]
