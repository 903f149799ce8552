"""``scripts/demo``: LLM Warmth at work with no GPU and no LLM server (see README)."""
