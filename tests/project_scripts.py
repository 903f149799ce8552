"""The project's scripts (files under scripts/ without a .py suffix), imported for a test."""

from importlib.machinery import SourceFileLoader
from importlib.util import module_from_spec, spec_from_loader
from pathlib import Path
from types import ModuleType

SCRIPTS = Path(__file__).resolve().parent.parent / "scripts"


def load_script(name: str) -> ModuleType:
    """Import ``scripts/<name>`` afresh as a module."""
    loader = SourceFileLoader(name.replace("-", "_"), str(SCRIPTS / name))
    spec = spec_from_loader(loader.name, loader)
    assert spec is not None
    module = module_from_spec(spec)
    loader.exec_module(module)
    return module
