"""provision."""
