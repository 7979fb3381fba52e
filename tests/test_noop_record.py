"""The no-op record never vouches for a source edited while the build that writes it ran
(builders/noop.py): that build may have read the file before the edit."""
from __future__ import annotations

import os

from nnscons.builders import noop


def _ident(path):
    st = os.stat(path)
    return [st.st_mtime_ns, st.st_size, st.st_ino]


def test_a_source_edited_after_the_build_started_is_not_recorded(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    template = tmp_path / "templates" / "conv2d.c.j2"
    template.parent.mkdir()
    template.write_text("edited during the build\n")          # after this process started
    assert noop.edited_during_build(str(template), _ident(template))
    old = noop.STARTED_NS - 10_000_000_000                     # 10 s before the build began
    os.utime(template, ns=(old, old))
    assert not noop.edited_during_build(str(template), _ident(template))


def test_files_the_build_writes_under_build_are_its_own(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "build" / "host" / "m" / "run.log"
    out.parent.mkdir(parents=True)
    out.write_text("written by this build\n")
    assert not noop.edited_during_build(os.path.join("build", "host", "m", "run.log"), _ident(out))
