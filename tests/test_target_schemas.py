"""targets.yaml is checked against every target kind's schema on every call: the schemas are
read from targets/<kind>/schema.py without importing the kinds' packages (their planning
code), and they are the schemas the packages themselves expose."""
from __future__ import annotations

import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_schemas_do_not_import_the_kinds():
    code = ("import json, sys; sys.path.insert(0, 'site_scons')\n"
            "from nnscons.targets import kinds, schemas\n"
            "schemas()\n"
            "print(json.dumps(sorted(m for m in sys.modules if m.startswith('nnscons.targets.'))))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True, capture_output=True,
                         text=True).stdout
    loaded = {m.split(".")[2] for m in json.loads(out)}
    # the host kind keeps its schema in its package; no other kind's package is imported
    assert loaded <= {"host", "base", "library", "portable"}, loaded


def test_schemas_are_the_packages_own():
    from nnscons.targets import kind_module, kinds, schema
    for kind in kinds():
        assert schema(kind) == kind_module(kind).SCHEMA, kind
