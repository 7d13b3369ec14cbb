"""Microsoft Agent Framework agents behind signoff: ``SignoffAgent(my_agent, connect(policy,
origin="agent-framework"))``, whose `SignoffMiddleware` judges each call and whose threads'
sessions signoff keeps (docs/integrations/agent-framework.md)."""

from signoff.gate.external import connect
from signoff.integrations._extra import needs

with needs(__name__, "agent-framework"):  # the framework is imported by the parts below
    from signoff.integrations.agent_framework.agent import ORIGIN, SignoffAgent
    from signoff.integrations.agent_framework.asking import ask_person
    from signoff.integrations.agent_framework.middleware import SignoffMiddleware

__all__ = ["ORIGIN", "SignoffAgent", "SignoffMiddleware", "ask_person", "connect"]
