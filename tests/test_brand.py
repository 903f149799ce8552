"""The brand images Home Assistant (2026.3+) serves from the integration's own folder."""

from pathlib import Path
import struct

import pytest

BRAND = Path(__file__).parent.parent / "custom_components" / "llm_warmth" / "brand"


@pytest.mark.parametrize(
    ("name", "size"),
    [
        ("icon.png", (256, 256)),
        ("icon@2x.png", (512, 512)),
        ("dark_icon.png", (256, 256)),
        ("dark_icon@2x.png", (512, 512)),
        ("logo.png", (384, 128)),
        ("logo@2x.png", (768, 256)),
        ("dark_logo.png", (384, 128)),
        ("dark_logo@2x.png", (768, 256)),
    ],
)
def test_brand_image(name: str, size: tuple[int, int]) -> None:
    """Each file is a PNG of the size Home Assistant's brand guidelines ask for."""
    data = (BRAND / name).read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert data[12:16] == b"IHDR"
    assert struct.unpack(">II", data[16:24]) == size
