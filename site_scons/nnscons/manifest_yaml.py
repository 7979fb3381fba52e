"""YAML loading with positions for targets.yaml: mappings and lists that remember the
line of every key and item (so that each error names file:line), duplicate keys refused."""
from __future__ import annotations

import json
import re

import yaml


class _Map(dict):
    """A mapping that remembers the 1-based lines of its keys and values."""
    line = 0

    def __init__(self):
        super().__init__()
        self.key_lines = {}
        self.value_lines = {}


class _Seq(list):
    def __init__(self):
        super().__init__()
        self.item_lines = []


class _DuplicateKey(Exception):
    def __init__(self, path, line, first_line):
        super().__init__(path)
        self.path, self.line, self.first_line = path, line, first_line


class _Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
    """SafeLoader building _Map/_Seq, keeping keys as written and refusing duplicates
    (PyYAML would silently keep the last one). Keys stay strings even when they look
    like numbers or booleans: `123:` is the layer named "123", `yes:` a model "yes".
    libyaml's parser where PyYAML has it (targets.yaml in 2 ms instead of 17 ms: every
    scons call reads it); the same nodes, marks and errors."""

    def __init__(self, stream):
        super().__init__(stream)
        self.path = []  # key path of the node being constructed, for duplicate errors

    def construct_map(self, node):
        seen = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key, line = self._key(key_node), key_node.start_mark.line + 1
            if key in seen:
                raise _DuplicateKey(self.path + [key], line, seen[key])
            seen[key] = line
        self.flatten_mapping(node)  # `<<: *anchor` merges; explicit keys override
        result = _Map()
        result.line = node.start_mark.line + 1
        for key_node, value_node in node.value:
            key = self._key(key_node)
            self.path.append(key)
            result[key] = self.construct_object(value_node, deep=True)
            self.path.pop()
            result.key_lines[key] = key_node.start_mark.line + 1
            result.value_lines[key] = value_node.start_mark.line + 1
        return result

    def construct_seq(self, node):
        result = _Seq()
        for i, item in enumerate(node.value):
            self.path.append(i)
            result.append(self.construct_object(item, deep=True))
            self.path.pop()
            result.item_lines.append(item.start_mark.line + 1)
        return result

    def _key(self, node):
        if not isinstance(node, yaml.ScalarNode):
            raise yaml.constructor.ConstructorError(
                None, None, "mapping keys must be plain names, not lists or mappings",
                node.start_mark)
        return node.value


_Loader.add_constructor("tag:yaml.org,2002:map", _Loader.construct_map)
_Loader.add_constructor("tag:yaml.org,2002:seq", _Loader.construct_seq)


def _dotted(path) -> str:
    """models.resnet18.layers."layer1.0.conv1".l1_budget -- quote keys that hold dots."""
    parts = []
    for p in path:
        if isinstance(p, int):
            parts.append(f"[{p}]")
        else:
            text = p if re.fullmatch(r"[A-Za-z0-9_-]+", p) else json.dumps(p)
            parts.append(("." if parts else "") + text)
    return "".join(parts)


def _describe(value) -> str:
    if value is None:
        return "nothing (empty value)"
    if isinstance(value, bool):
        return f"a boolean ({str(value).lower()})"
    if isinstance(value, int):
        return f"an integer ({value})"
    if isinstance(value, float):
        return f"a number ({value})"
    if isinstance(value, str):
        return f"a string ({value!r})"
    if isinstance(value, list):
        return "a list"
    return "a mapping"
