#!/usr/bin/python3
"""Reads the pixels of a PNG with Python's standard library alone (zlib), for
the test of the README's rsvg-convert recipe.

    png_pixels.py FILE [X,Y | X0,Y0,X1,Y1] ...

prints the picture's size ("WIDTH HEIGHT"), then a line per argument: for a
point, its colour "#rrggbb"; for a box (X1, Y1 excluded), its lightest and
darkest colour by the sum of the channels, and "grey" when every pixel in it
has equal channels (within 2) or "colour" otherwise. Reads 8-bit RGB and RGBA
pictures without interlacing, as rsvg-convert writes them; alpha is ignored
(qkv's SVG paints its whole background)."""
import struct
import sys
import zlib


def read_png(path):
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        sys.exit(f"{path}: not a PNG")
    pos, idat = 8, b""
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        chunk = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", chunk)
            if depth != 8 or colour not in (2, 6) or interlace != 0:
                sys.exit(f"{path}: depth {depth}, colour type {colour}, interlace {interlace}; expected 8-bit RGB(A)")
        elif kind == b"IDAT":
            idat += chunk
        pos += 12 + length
    channels = 4 if colour == 6 else 3
    raw = zlib.decompress(idat)
    stride = width * channels
    rows, previous, at = [], bytearray(stride), 0
    for _ in range(height):
        kind, line = raw[at], bytearray(raw[at + 1:at + 1 + stride])
        at += 1 + stride
        for i in range(stride):
            left = line[i - channels] if i >= channels else 0
            up = previous[i]
            corner = previous[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + left) & 0xFF
            elif kind == 2:
                line[i] = (line[i] + up) & 0xFF
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 0xFF
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                predictor = left if pa <= pb and pa <= pc else (up if pb <= pc else corner)
                line[i] = (line[i] + predictor) & 0xFF
        rows.append(line)
        previous = line
    return width, height, lambda x, y: tuple(rows[y][x * channels:x * channels + 3])


def hex_colour(rgb):
    return "#%02x%02x%02x" % rgb


def main():
    width, height, pixel = read_png(sys.argv[1])
    print(width, height)
    for arg in sys.argv[2:]:
        numbers = [int(float(v)) for v in arg.split(",")]
        if len(numbers) == 2:
            print(hex_colour(pixel(*numbers)))
            continue
        x0, y0, x1, y1 = numbers
        box = [pixel(x, y) for y in range(y0, y1) for x in range(x0, x1)]
        grey = all(max(c) - min(c) <= 2 for c in box)
        print(hex_colour(max(box, key=sum)), hex_colour(min(box, key=sum)), "grey" if grey else "colour")


main()
