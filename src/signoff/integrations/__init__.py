"""Framework integrations: one module per framework, each an optional extra (ARCHITECTURE §6)."""
