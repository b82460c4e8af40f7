"""Arbitrary strings as namespace segments, reversibly: the library's segments hold
letters, digits and ``-_.:@``, while LangGraph labels and mem0 ids may hold anything."""

from __future__ import annotations

import re

_PLAIN = re.compile(r"[A-Za-z0-9._:\-]+")
_ESCAPE = re.compile(r"@([0-9A-F]{2})")


def encode_label(label: str) -> str:
    """``label`` as a namespace segment: kept when it is made of letters, digits and
    ``._:-``; otherwise every other character (``@`` included) is written ``@XX`` per UTF-8
    byte. The empty label is ``@``."""
    if label and _PLAIN.fullmatch(label):
        return label
    out = []
    for char in label:
        if _PLAIN.fullmatch(char):
            out.append(char)
        else:
            out.extend(f"@{byte:02X}" for byte in char.encode("utf-8"))
    return "".join(out) or "@"


def decode_label(segment: str) -> str:
    """The label :func:`encode_label` turned into ``segment``."""
    if segment == "@":
        return ""
    if "@" not in segment:
        return segment
    raw = bytearray()
    position = 0
    for match in _ESCAPE.finditer(segment):
        raw.extend(segment[position : match.start()].encode("utf-8"))
        raw.append(int(match.group(1), 16))
        position = match.end()
    raw.extend(segment[position:].encode("utf-8"))
    return raw.decode("utf-8", errors="replace")
