"""Channels that live in someone else's app: the pending approvals shown and decided where
people already work (``signoff.channels.streamlit``), over a server's REST API or straight on a
database (``signoff.channels.sources``)."""
