"""LLM Warmth's core: everything that can be decided without Home Assistant.

Nothing in this package imports ``homeassistant`` (``tests/test_core_boundary.py`` checks
it): the server clients and their parsers, the GPU sources, residency tracking, the TTFT
stage math and headroom. It uses relative imports only, so that it can be loaded on its
own (``scripts/gpu_check`` does) and could become a library unchanged.
"""
