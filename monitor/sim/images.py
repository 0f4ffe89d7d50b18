"""Image inputs of chat requests: decoding ``data:`` URLs, token cost and dominant colour."""

from __future__ import annotations

import base64
import binascii
import io
import math
from dataclasses import dataclass

from PIL import Image, UnidentifiedImageError

#: Named colours an image probe may ask about (RGB centres; nearest wins).
_COLOURS: dict[str, tuple[int, int, int]] = {
    "red": (220, 30, 30),
    "green": (30, 180, 30),
    "blue": (30, 30, 220),
    "yellow": (230, 220, 30),
    "orange": (250, 140, 20),
    "purple": (130, 30, 160),
    "cyan": (30, 210, 220),
    "magenta": (220, 30, 210),
    "black": (10, 10, 10),
    "white": (245, 245, 245),
    "gray": (128, 128, 128),
}


class ImageInputError(ValueError):
    """An ``image_url`` could not be decoded (the request is answered with HTTP 400)."""


@dataclass(frozen=True)
class ImageInfo:
    """What the simulator takes from one image: its size, token cost and dominant colour."""

    width: int
    height: int
    tokens: int
    colour: str


def decode_image(url: str, patch: int) -> ImageInfo:
    """Decode a ``data:image/...;base64,`` URL; cost is one token per ``patch``x``patch`` patch."""
    if not url.startswith("data:") or ";base64," not in url:
        raise ImageInputError("only data: URLs with base64 image data are supported by the simulator")
    try:
        raw = base64.b64decode(url.split(";base64,", 1)[1], validate=True)
        with Image.open(io.BytesIO(raw)) as img:
            rgb = img.convert("RGB")
    except (binascii.Error, UnidentifiedImageError, OSError) as exc:
        raise ImageInputError(f"cannot decode image: {exc}") from exc
    w, h = rgb.size
    tokens = max(1, math.ceil(w / patch) * math.ceil(h / patch))
    return ImageInfo(w, h, tokens, dominant_colour(rgb))


def dominant_colour(img: Image.Image) -> str:
    """Name of the colour nearest to the most frequent colour of a downscaled copy."""
    small = img.resize((16, 16))
    counts: dict[str, int] = {}
    for i in range(16):
        for j in range(16):
            px = small.getpixel((i, j))
            assert isinstance(px, tuple)
            name = _nearest(px[0], px[1], px[2])
            counts[name] = counts.get(name, 0) + 1
    return max(counts.items(), key=lambda kv: kv[1])[0]


def _nearest(r: int, g: int, b: int) -> str:
    return min(_COLOURS, key=lambda n: sum((a - c) ** 2 for a, c in zip((r, g, b), _COLOURS[n], strict=True)))
