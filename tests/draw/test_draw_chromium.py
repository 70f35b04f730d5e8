"""The vLLM multi-turn deployment, rendered by a real browser: headless
Chromium (Debian's `chromium`; tools/install_chromium.sh installs it, and
this test runs that script itself under CI) takes a screenshot of the SVG,
which must not be blank.  Skipped where Chromium cannot be had.

SERQ_DRAW_SCREENSHOT=path keeps a copy of the screenshot (to look at it).
"""

from __future__ import annotations

import os
import re
import shutil
import struct
import subprocess
import tempfile
import zlib

import pytest

from drawing import ROOT, drawn

EXAMPLE = "examples/multi-turn/vllm.sq"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--hide-scrollbars"]


def chromium() -> str | None:
    """Chromium's path; where it is missing, CI (or SERQ_INSTALL_CHROMIUM=1)
    installs it with tools/install_chromium.sh first."""
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    if not (os.environ.get("CI") or os.environ.get("SERQ_INSTALL_CHROMIUM")):
        return None
    script = os.path.join(ROOT, "tools", "install_chromium.sh")
    try:
        subprocess.run(["sh", script], timeout=900, capture_output=True)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return shutil.which("chromium")


def read_png(data: bytes) -> tuple[int, int, int, list[bytes]]:
    """Width, height, channels and the unfiltered rows of an 8-bit,
    non-interlaced PNG (what Chromium writes)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, head = 8, b"", None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            head = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    w, h, depth, colour, _, _, interlace = head
    assert depth == 8 and interlace == 0, head
    ch = {0: 1, 2: 3, 4: 2, 6: 4}[colour]
    raw = zlib.decompress(idat)
    stride = w * ch
    rows, prev, i = [], bytearray(stride), 0
    for _ in range(h):
        f, line = raw[i], bytearray(raw[i + 1:i + 1 + stride])
        i += 1 + stride
        for x in range(stride):
            a = line[x - ch] if x >= ch else 0
            b = prev[x]
            c = prev[x - ch] if x >= ch else 0
            if f == 1:
                line[x] = (line[x] + a) & 255
            elif f == 2:
                line[x] = (line[x] + b) & 255
            elif f == 3:
                line[x] = (line[x] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return w, h, ch, rows


def test_read_png_reads_a_png_it_made():
    w, h = 3, 2
    raw = b"".join(b"\x00" + bytes([255, 0, 0] * w) for _ in range(h))

    def chunk(kind, body):
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
    png = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
           + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))
    assert read_png(png) == (3, 2, 3, [bytes([255, 0, 0] * 3)] * 2)


def test_the_vllm_deployment_renders_in_chromium(tmp_path):
    exe = chromium()
    if exe is None:
        pytest.skip("chromium is not installed (sh tools/install_chromium.sh installs it)")
    svg = drawn(EXAMPLE, "deployment", "svg")
    path = tmp_path / "vllm.deployment.svg"
    path.write_text(svg, encoding="utf-8")
    m = re.search(r'<svg[^>]* width="([\d.]+)" height="([\d.]+)"', svg)
    W, H = int(float(m.group(1))) + 1, int(float(m.group(2))) + 1
    shot = tmp_path / "shot.png"
    with tempfile.TemporaryDirectory() as profile:
        r = subprocess.run([exe, *FLAGS, f"--user-data-dir={profile}", f"--window-size={max(W, 800)},{max(H, 600)}",
                            f"--screenshot={shot}", path.as_uri()],
                           capture_output=True, text=True, timeout=180)
    if not shot.exists():
        pytest.fail(f"chromium wrote no screenshot (exit {r.returncode}): {r.stderr[-2000:]}")
    keep = os.environ.get("SERQ_DRAW_SCREENSHOT")
    if keep:
        shutil.copyfile(shot, keep)
    w, h, ch, rows = read_png(shot.read_bytes())
    assert w >= W and h >= H
    inked = blue = 0
    for y in range(min(h, H)):
        row = rows[y]
        for x in range(min(w, W)):
            px = row[x * ch:x * ch + 3]
            if min(px) < 200:
                inked += 1
            if px[2] > 150 and px[2] - px[0] > 60:   # the engine's blue (#1D4ED8 border, #DBEAFE fill)
                blue += 1
    area = W * H
    assert inked > area * 0.01, f"the screenshot is nearly blank: {inked} inked pixels of {area}"
    assert blue > 200, f"the engine's box is not visible: {blue} blue pixels"
