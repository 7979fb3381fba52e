"""Render jinja2 templates into C sources.

StrictUndefined turns a spec key missing from a template's view into an error
instead of silently emitting an empty string into C.  A template finds the templates it
pulls in beside itself first, then under templates/ (`{% import "common/_harness.j2" %}`:
the macros several targets' templates share).
"""
from __future__ import annotations

import functools
import os
import re

import jinja2

from .cstrings import c_comment, c_string
from .resources import DATA_ROOT

ROOT = os.path.join(DATA_ROOT, "templates")


@functools.lru_cache(maxsize=None)
def _environment(templates_dir: str) -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader([templates_dir, ROOT]),
                             undefined=jinja2.StrictUndefined, trim_blocks=True,
                             lstrip_blocks=True, keep_trailing_newline=True,
                             auto_reload=True)
    env.filters["c_comment"] = c_comment
    env.filters["c_string"] = c_string
    return env


# Filters a target kind adds for its own templates ({name: function}), e.g. the host's
# `kernelgen` (a generated BRGEMM layer source from its spec): registered by the kind, so
# this module does not import the generators above it.
_FILTERS = {}


def add_filter(name: str, function) -> None:
    """Make `function` the Jinja filter `name` of every template rendered from now on."""
    _FILTERS[name] = function


def render(templates_dir: str, template: str, **context) -> str:
    env = _environment(templates_dir)
    env.filters.update(_FILTERS)
    text = env.get_template(template).render(**context)
    return re.sub(r"\n{3,}", "\n\n", text)


def precompile(templates_dir: str) -> None:
    """Compile every template of templates_dir now, for render() to find them compiled
    (the kind's templates, while onnxruntime calibrates: builders/graph/session.py)."""
    templates_dir = os.path.abspath(templates_dir)        # the key render() is called with
    env = _environment(templates_dir)
    env.filters.update(_FILTERS)
    for name in sorted(os.listdir(templates_dir)):
        if name.endswith(".j2"):
            env.get_template(name)


_INCLUDE = re.compile(r"{%-?\s*(?:import|include|extends|from)\s+[\"']([^\"']+)[\"']")


def template_references(text: str) -> list:
    """Templates a template pulls in (for the SCons scanner)."""
    return _INCLUDE.findall(text)


def template_file(directory: str, name: str) -> str:
    """The file a template in `directory` pulls in as `name`: beside it, else under templates/
    (the loader's search path)."""
    beside = os.path.join(directory, name)
    return beside if os.path.isfile(beside) else os.path.join(ROOT, name)
