"""specdsl: plan/apply discipline for LLM-serving performance experiments."""
__version__ = "0.1.0"
