"""Untrusted text (model and node names) made safe inside generated C: a comment, a string
literal.  A leaf module: the template environment (codegen) and the Python C emitters
(kernelgen) both use it, and it imports nothing of the project."""
from __future__ import annotations


def c_comment(text: str) -> str:
    """Text safe inside a /* */ comment on one line (names are untrusted)."""
    text = "".join(ch if 32 <= ord(ch) < 127 else f"\\u{ord(ch):04x}" for ch in str(text))
    return text.replace("*/", "*\\/").replace("/*", "/\\*")


def c_string(text: str) -> str:
    """A C string literal (with its quotes) holding `text` (names are untrusted): printable
    ASCII as is, anything else as octal escapes of its UTF-8 bytes."""
    out = []
    for byte in str(text).encode("utf-8", "surrogatepass"):
        ch = chr(byte)
        if ch in '"\\?':
            out.append("\\" + ch)
        elif 32 <= byte < 127:
            out.append(ch)
        else:
            out.append(f"\\{byte:03o}")
    return '"' + "".join(out) + '"'
