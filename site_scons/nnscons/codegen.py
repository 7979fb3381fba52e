"""Render jinja2 templates into C sources.

StrictUndefined turns a spec key missing from a template's view into an error
instead of silently emitting an empty string into C.
"""
from __future__ import annotations

import functools
import re

import jinja2


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


@functools.lru_cache(maxsize=None)
def _environment(templates_dir: str) -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(templates_dir),
                             undefined=jinja2.StrictUndefined, trim_blocks=True,
                             lstrip_blocks=True, keep_trailing_newline=True,
                             auto_reload=True)
    env.filters["c_comment"] = c_comment
    env.filters["c_string"] = c_string
    env.filters["kernelgen"] = _kernelgen
    return env


def _kernelgen(spec) -> str:
    """A generated BRGEMM layer source (nnscons.kernelgen) from its spec."""
    from . import kernelgen
    return kernelgen.layer_source(spec)


def render(templates_dir: str, template: str, **context) -> str:
    text = _environment(templates_dir).get_template(template).render(**context)
    return re.sub(r"\n{3,}", "\n\n", text)


_INCLUDE = re.compile(r"{%-?\s*(?:import|include|extends|from)\s+[\"']([^\"']+)[\"']")


def template_references(text: str) -> list:
    """Templates a template pulls in (for the SCons scanner)."""
    return _INCLUDE.findall(text)
