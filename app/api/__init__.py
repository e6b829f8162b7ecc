"""HTTP layer."""
