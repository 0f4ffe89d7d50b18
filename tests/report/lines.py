"""Where a rendered report draws its attainment and error-budget lines, read from the pixels alone.

A matplotlib axes is a rectangle of near-black spines. The burn-down charts are the only ones with
exactly two axes side by side (attainment left, budget right; the latency chart has three, the
breakdowns one per row), so in a screenshot or a PDF page their panels are the frames that come in
pairs at the same height. Inside a panel, a *line* is a connected run of pixels in a series colour
at least :data:`MIN_WIDTH` of the panel wide: the markers at the points (a few pixels), the dotted
objectives and the dashed at-risk line (dots and dashes a few pixels long) never are.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import NDArray
from PIL import Image, ImageChops

Pixels = NDArray[np.uint8]
#: A line must run this share of its panel's width in one piece (dashes and markers are < 2 %).
MIN_WIDTH = 0.06
#: A piece of a line is at least this many pixels wide (markers and dots are smaller), and pieces
#: at most JOIN columns apart are one line.
PIECE, JOIN = 12, 3
#: How far (per channel) a pixel may be from a series colour and still be drawn in it.
TOLERANCE = 30
#: Pixels a tick mark adds below a spine (3.5 pt at up to 150 dpi, rounded up).
TICK = 8


@dataclass(frozen=True)
class Box:
    """A panel's inside: columns ``left..right`` and rows ``top..bottom`` (inclusive), spines excluded."""

    left: int
    top: int
    right: int
    bottom: int

    @property
    def width(self) -> int:
        return self.right - self.left + 1


def pixels(png: Path | bytes) -> Pixels:
    """The image's RGB values."""
    with Image.open(io.BytesIO(png) if isinstance(png, bytes) else png) as raw:
        return np.asarray(raw.convert("RGB"))


def _dark(img: Pixels) -> NDArray[np.bool_]:
    """Near-black pixels (every channel below 100: a spine, not a saturated series colour)."""
    pic = Image.fromarray(img)
    brightest = ImageChops.lighter(
        ImageChops.lighter(pic.getchannel(0), pic.getchannel(1)), pic.getchannel(2)
    )
    return np.asarray(brightest) < 100


def _vertical_runs(dark: NDArray[np.bool_], min_len: int) -> list[tuple[int, int, int]]:
    """(column, first row, last row) of every vertical run of dark pixels at least ``min_len`` long."""
    step = max(1, min_len // 3)  # such a run covers three consecutive rows of every step-th row
    sample = dark[::step]
    candidates = np.flatnonzero((sample[:-2] & sample[1:-1] & sample[2:]).any(axis=0))
    d = np.diff(np.ascontiguousarray(dark[:, candidates].T).view(np.int8), axis=1, prepend=0, append=0)
    idx, starts = np.nonzero(d == 1)
    _, ends = np.nonzero(d == -1)  # same order: per column, runs start and end alternately
    keep = ends - starts >= min_len
    cols = candidates[idx[keep]]
    runs = sorted(zip(cols.tolist(), starts[keep].tolist(), (ends[keep] - 1).tolist(), strict=True))
    merged: list[tuple[int, int, int]] = []
    for c, a, b in runs:  # an antialiased spine is two columns wide: keep one
        if merged and c - merged[-1][0] <= 2 and abs(a - merged[-1][1]) <= 3 and abs(b - merged[-1][2]) <= 3:
            continue
        merged.append((c, a, b))
    return merged


def frames(img: Pixels, min_height: int = 60) -> list[list[Box]]:
    """The axes frames of ``img``, grouped by height (frames side by side), top to bottom, left to right."""
    dark = _dark(img)
    rows: dict[tuple[int, int], list[int]] = {}
    for c, a, b in _vertical_runs(dark, min_height):
        # a tick mark drawn on a spine's end (a time axis ending on a tick) lengthens that spine's run
        key = next((k for k in rows if abs(k[0] - a) <= 3 and abs(k[1] - b) <= TICK), (a, b))
        rows.setdefault(key, []).append(c)
    out = []
    for (a, b), cols in sorted(rows.items()):
        cols.sort()
        boxes = []
        for left, right in zip(cols[0::2], cols[1::2], strict=False):
            edge = dark[max(0, a - 2) : a + 3, left:right].any(axis=0).mean()  # the top spine joins them
            if right - left > 40 and edge > 0.9:
                boxes.append(Box(left + 3, a + 3, right - 3, b - 3))
        if boxes:
            out.append(boxes)
    return out


def burn_panels(img: Pixels) -> list[tuple[Box, Box]]:
    """The (attainment, budget) panels of each burn-down chart in ``img``, top to bottom."""
    return [(row[0], row[1]) for row in frames(img) if len(row) == 2]


def _components(mask: NDArray[np.bool_]) -> list[set[int]]:
    """The columns each 8-connected group of ``mask`` pixels spans (one set per group)."""
    todo = set(zip(*(v.tolist() for v in np.nonzero(mask)), strict=True))
    out = []
    while todo:
        stack = [todo.pop()]
        cols = set()
        while stack:
            r, c = stack.pop()
            cols.add(c)
            for dr in (-1, 0, 1):
                for dc in (-1, 0, 1):
                    n = (r + dr, c + dc)
                    if n in todo:
                        todo.remove(n)
                        stack.append(n)
        out.append(cols)
    return out


def colour_mask(img: Pixels, colours: list[str]) -> NDArray[np.bool_]:
    """Pixels within TOLERANCE (per channel) of one of ``colours`` (``#rrggbb``)."""
    wide = img.astype(np.int16)
    hit = np.zeros(img.shape[:2], dtype=bool)
    for colour in colours:
        ref = np.array([int(colour[k : k + 2], 16) for k in (1, 3, 5)], dtype=np.int16)
        hit |= np.all(np.abs(wide - ref) <= TOLERANCE, axis=2)
    return hit


def line_columns(img: Pixels, box: Box, colours: list[str]) -> set[int]:
    """Columns of ``box`` (0 = its left edge) crossed by a solid line in one of ``colours``."""
    inside = img[box.top : box.bottom + 1, box.left : box.right + 1]
    wide = max(8, round(MIN_WIDTH * box.width))
    pieces = [
        cols for cols in _components(colour_mask(inside, colours)) if max(cols) - min(cols) + 1 >= PIECE
    ]
    spans = [c for c in _chains(pieces) if max(c) - min(c) + 1 >= wide]
    return set().union(*spans) if spans else set()


def _chains(pieces: list[set[int]]) -> list[set[int]]:
    """Pieces of line (each wider than any marker or dot) joined where they overlap or leave at
    most :data:`JOIN` columns between them: a line rasterized in a PDF breaks where it crosses a
    grid line or another series, and its pieces can each be narrower than :data:`MIN_WIDTH`."""
    out: list[set[int]] = []
    for cols in sorted(pieces, key=min):
        if out and min(cols) <= max(out[-1]) + JOIN + 1:
            out[-1] |= cols
        else:
            out.append(set(cols))
    return out


def coverage(img: Pixels, box: Box, colours: list[str]) -> float:
    """Share of the panel's width crossed by a solid line in one of ``colours``."""
    return len(line_columns(img, box, colours)) / box.width
