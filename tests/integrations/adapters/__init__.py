"""One `Adapter` (tests/integrations/scenarios.py) per framework integration."""
