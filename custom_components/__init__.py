"""Custom integrations shipped by this repository."""
