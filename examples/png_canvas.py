"""An RGB canvas that draws rectangles, lines and text, saved as PNG: pure Python (zlib and struct), no imaging
library. Text uses a 5 x 7 bitmap font of printable ASCII embedded below (6 x 8 pixels a character cell)."""

from __future__ import annotations

import struct
import zlib

Colour = tuple[int, int, int]

CHAR_W, CHAR_H = 6, 8  # a character cell: 5 x 7 glyph, 1 pixel of spacing right and below
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"

# Printable ASCII 0x20-0x7e, 5 columns a glyph, one byte a column, bit 0 the top row.
_FONT = bytes.fromhex(
    "0000000000 00005f0000 0007000700 147f147f14 242a7f2a12 2313086462 3649552250 0005030000"
    "001c224100 0041221c00 14083e0814 08083e0808 0050300000 0808080808 0060600000 2010080402"
    "3e5149453e 00427f4000 4261514946 2141454b31 1814127f10 2745454539 3c4a494930 0171090503"
    "3649494936 064949291e 0036360000 0056360000 0814224100 1414141414 0041221408 0201510906"
    "324979413e 7e1111117e 7f49494936 3e41414122 7f4141221c 7f49494941 7f09090901 3e4149497a"
    "7f0808087f 00417f4100 2040413f01 7f08142241 7f40404040 7f020c027f 7f0408107f 3e4141413e"
    "7f09090906 3e4151215e 7f09192946 4649494931 01017f0101 3f4040403f 1f2040201f 3f4038403f"
    "6314081463 0708700807 6151494543 007f414100 0204081020 0041417f00 0402010204 4040404040"
    "0001020400 2054545478 7f48444438 3844444420 384444487f 3854545418 087e090102 0c5252523e"
    "7f08040478 00447d4000 2040443d00 7f10284400 00417f4000 7c04180478 7c08040478 3844444438"
    "7c14141408 081414187c 7c08040408 4854545420 043f444020 3c4040207c 1c2040201c 3c4030403c"
    "4428102844 0c5050503c 4464544c44 0008364100 00007f0000 0041360800 0804081008"
)


def glyph(char: str) -> bytes:
    """The 5 column bytes of ``char`` ('?' for a character outside printable ASCII)."""
    code = ord(char) if " " <= char <= "~" else ord("?")
    return _FONT[5 * (code - 32):5 * (code - 31)]


def text_width(text: str) -> int:
    """Pixels ``text`` takes on one line."""
    return CHAR_W * len(text)


class Canvas:
    """``width`` x ``height`` RGB pixels, filled with ``background``; drawing clips to the canvas."""

    def __init__(self, width: int, height: int, background: Colour) -> None:
        self.width, self.height = width, height
        self.pixels = bytearray(bytes(background) * (width * height))

    def pixel(self, x: int, y: int) -> Colour:
        i = 3 * (y * self.width + x)
        return tuple(self.pixels[i:i + 3])

    def set(self, x: int, y: int, colour: Colour) -> None:
        if 0 <= x < self.width and 0 <= y < self.height:
            i = 3 * (y * self.width + x)
            self.pixels[i:i + 3] = bytes(colour)

    def rect(self, x0: int, y0: int, x1: int, y1: int, colour: Colour) -> None:
        """Fill the pixels x0 <= x < x1, y0 <= y < y1."""
        x0, x1 = max(x0, 0), min(x1, self.width)
        if x0 >= x1:
            return
        row = bytes(colour) * (x1 - x0)
        for y in range(max(y0, 0), min(y1, self.height)):
            i = 3 * (y * self.width + x0)
            self.pixels[i:i + len(row)] = row

    def line(self, x0: int, y0: int, x1: int, y1: int, colour: Colour) -> None:
        """A one-pixel line from (x0, y0) to (x1, y1), both ends included (Bresenham)."""
        dx, dy = abs(x1 - x0), -abs(y1 - y0)
        sx, sy = (1 if x0 < x1 else -1), (1 if y0 < y1 else -1)
        err = dx + dy
        while True:
            self.set(x0, y0, colour)
            if (x0, y0) == (x1, y1):
                return
            if 2 * err >= dy:
                err, x0 = err + dy, x0 + sx
            if 2 * err <= dx:
                err, y0 = err + dx, y0 + sy

    def text(self, x: int, y: int, text: str, colour: Colour) -> None:
        """``text`` with its first cell's top-left corner at (x, y)."""
        for k, char in enumerate(text):
            for col, bits in enumerate(glyph(char)):
                for row in range(7):
                    if bits >> row & 1:
                        self.set(x + k * CHAR_W + col, y + row, colour)

    def png(self) -> bytes:
        """The canvas as a PNG file: 8-bit RGB, no interlace, every row with filter 0 (none), one IDAT chunk."""
        stride = 3 * self.width
        raw = b"".join(b"\x00" + self.pixels[y * stride:(y + 1) * stride] for y in range(self.height))
        header = struct.pack(">IIBBBBB", self.width, self.height, 8, 2, 0, 0, 0)
        return PNG_SIGNATURE + _chunk(b"IHDR", header) + _chunk(b"IDAT", zlib.compress(raw, 9)) + _chunk(b"IEND", b"")


def _chunk(kind: bytes, data: bytes) -> bytes:
    """A PNG chunk: length, type, data, CRC-32 of type and data."""
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
