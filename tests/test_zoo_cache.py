"""Zoo models generated once per content (planning/zoo_cache.py): build/.zoo holds the bytes
and their digest; every build folder's model file is a hard link to it (a copy where no link
can be made); a damaged entry or a damaged copy is never trusted."""
from __future__ import annotations

import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "site_scons"))

from nnscons.planning import zoo_cache  # noqa: E402
from nnscons.resources import zoo  # noqa: E402

SHAPE = (1, 1, 28, 28)


@pytest.fixture
def generated(monkeypatch, tmp_path):
    """Run in tmp_path (build/ relative to it); counts the zoo generator's calls."""
    monkeypatch.chdir(tmp_path)
    zoo_cache._GENERATED.clear()       # protos another test's planning left in this process
    zoo_cache._WEIGHTS.clear()
    calls = []
    real = zoo().build

    def counting(*args):
        calls.append(args)
        return real(*args)
    monkeypatch.setattr(zoo(), "build", counting)
    yield calls
    # generations started ahead and never taken: ended and dropped, so no other test sees them
    for ahead in list(zoo_cache._AHEAD.values()):
        try:
            ahead.result()
        except Exception:      # noqa: BLE001 - what a test's generator raised
            pass
    zoo_cache._AHEAD.clear()
    zoo_cache._GENERATED.clear()
    zoo_cache._WEIGHTS.clear()


def _want() -> bytes:
    # the generator module itself: not counted as a call of zoo().build
    return zoo().ZOO["simplecnn"].build(0, SHAPE).SerializeToString(deterministic=True)


def _entry() -> str:
    (name,) = [f for f in os.listdir(os.path.join("build", ".zoo")) if f.endswith(".onnx")]
    return os.path.join("build", ".zoo", name)


def test_generated_once_for_every_build_folder(generated):
    a, b = os.path.join("build", "host", "m", "model.onnx"), os.path.join("build", "gap9", "m", "model.onnx")
    assert zoo_cache.write("simplecnn", 0, SHAPE, a)
    assert zoo_cache.write("simplecnn", 0, SHAPE, b)
    assert not zoo_cache.write("simplecnn", 0, SHAPE, a)        # holds those bytes: not rewritten
    assert len(generated) == 1
    want = _want()
    assert open(a, "rb").read() == open(b, "rb").read() == want
    assert open(_entry() + ".sha256").read().strip() == __import__("hashlib").sha256(want).hexdigest()
    # other arguments are another entry
    assert zoo_cache.write("simplecnn", 1, SHAPE, a)
    assert len(generated) == 2 and open(a, "rb").read() != want


def test_a_damaged_entry_is_generated_again(generated):
    a, b = os.path.join("build", "host", "m", "model.onnx"), os.path.join("build", "gap9", "m", "model.onnx")
    zoo_cache.write("simplecnn", 0, SHAPE, a)
    with open(_entry(), "r+b") as f:               # truncated in place
        f.truncate(100)
    assert zoo_cache.write("simplecnn", 0, SHAPE, b)
    assert len(generated) == 2
    assert open(b, "rb").read() == open(_entry(), "rb").read() == _want()


def test_a_replaced_copy_is_restored_from_the_cache(generated):
    a = os.path.join("build", "host", "m", "model.onnx")
    zoo_cache.write("simplecnn", 0, SHAPE, a)
    os.unlink(a)
    with open(a, "wb") as f:
        f.write(b"not the model")
    assert zoo_cache.write("simplecnn", 0, SHAPE, a)
    assert len(generated) == 1 and open(a, "rb").read() == _want()


def test_a_copy_edited_in_place_is_generated_again(generated):
    # the copy is a hard link to the entry: editing it edits the entry, whose digest then
    # no longer matches, so neither is trusted
    a = os.path.join("build", "host", "m", "model.onnx")
    zoo_cache.write("simplecnn", 0, SHAPE, a)
    assert os.path.samefile(a, _entry())
    with open(a, "r+b") as f:
        f.seek(200)
        f.write(b"\0\0\0\0")
    assert zoo_cache.write("simplecnn", 0, SHAPE, a)
    assert len(generated) == 2 and open(a, "rb").read() == open(_entry(), "rb").read() == _want()


def test_copied_where_no_link_can_be_made(generated, monkeypatch):
    def cross_device(src, dst):
        raise OSError(18, "Invalid cross-device link")
    monkeypatch.setattr(os, "link", cross_device)
    a, b = os.path.join("build", "host", "m", "model.onnx"), os.path.join("build", "gap9", "m", "model.onnx")
    zoo_cache.write("simplecnn", 0, SHAPE, a)
    assert zoo_cache.write("simplecnn", 0, SHAPE, b)
    assert not os.path.samefile(a, _entry()) and not os.path.samefile(b, _entry())
    assert open(a, "rb").read() == open(b, "rb").read() == _want()
    assert not [f for d in ("host", "gap9") for f in os.listdir(os.path.join("build", d, "m"))
                if f.startswith(".tmp-")]


def test_the_planning_imports_the_proto_and_the_model_step_writes_it(generated):
    """A generated model is not written while the planning imports it: the MODEL step
    (write) serializes the proto the planning generated, without generating it again."""
    a = os.path.join("build", "host", "m", "model.onnx")
    proto = zoo_cache.materialize_async("simplecnn", 0, SHAPE, a)
    assert proto.SerializeToString(deterministic=True) == _want()
    assert not os.path.exists(a) and not os.path.exists(os.path.join("build", ".zoo"))
    assert zoo_cache.write("simplecnn", 0, SHAPE, a)
    assert open(a, "rb").read() == _want() and os.path.samefile(a, _entry()) and len(generated) == 1
    # an intact entry: linked at once, nothing generated
    b = os.path.join("build", "gap9", "m", "model.onnx")
    assert zoo_cache.materialize_async("simplecnn", 0, SHAPE, b) is None
    assert len(generated) == 1 and open(b, "rb").read() == _want()
    # a MODEL step in a later process (the proto is gone): generated again from nothing
    zoo_cache._GENERATED.clear()
    zoo_cache._WEIGHTS.clear()
    os.unlink(_entry())
    assert zoo_cache.write("simplecnn", 0, SHAPE, a) is False and len(generated) == 2


def test_a_matrix_plans_every_build_folder_from_one_generation(generated):
    """Two targets of one zoo model in one process (a matrix): the second planning takes the
    proto the first generated (no file holds it yet), and each MODEL step writes its file
    from it: generated once."""
    a, b = os.path.join("build", "host", "m", "model.onnx"), os.path.join("build", "gap9", "m", "model.onnx")
    calls = []
    first = zoo_cache.materialize_async("simplecnn", 0, SHAPE, a)
    second = zoo_cache.materialize_async("simplecnn", 0, SHAPE, b, meanwhile=lambda: calls.append(1))
    assert second is first and calls == [1] and len(generated) == 1
    assert zoo_cache.write("simplecnn", 0, SHAPE, b) and zoo_cache.write("simplecnn", 0, SHAPE, a)
    assert open(a, "rb").read() == open(b, "rb").read() == _want() and len(generated) == 1


def test_a_failed_write_is_raised_by_the_model_step(generated, monkeypatch):
    def full(path, data, executable=False):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(zoo_cache, "write_if_changed", full)
    a = os.path.join("build", "host", "m", "model.onnx")
    assert zoo_cache.materialize_async("simplecnn", 0, SHAPE, a) is not None
    with pytest.raises(OSError, match="No space left"):
        zoo_cache.write("simplecnn", 0, SHAPE, a)


def test_a_foreign_build_folder_keeps_its_entries_in_its_cache(generated):
    path = os.path.join("out", "net", "model.onnx")
    zoo_cache.write("simplecnn", 0, SHAPE, path)
    assert not os.path.exists("build")
    assert [f for f in os.listdir(os.path.join("out", "net", "cache")) if f.endswith(".onnx")]
    assert open(path, "rb").read() == _want()


def test_generated_on_another_thread_while_the_caller_works(generated):
    import threading
    a = os.path.join("build", "host", "m", "model.onnx")
    calls = []
    proto = zoo_cache.materialize_async("simplecnn", 0, SHAPE, a,
                                        meanwhile=lambda: calls.append(threading.current_thread()))
    zoo_cache.write("simplecnn", 0, SHAPE, a)
    assert calls == [threading.main_thread()] and len(generated) == 1
    assert proto.SerializeToString(deterministic=True) == open(a, "rb").read() == _want()
    # nothing to generate: meanwhile is called all the same
    proto = zoo_cache.materialize_async("simplecnn", 0, SHAPE, a, meanwhile=lambda: calls.append(1))
    assert proto is None and calls[1:] == [1] and len(generated) == 1


def test_generated_ahead_is_taken_by_the_planning(generated):
    """prefetch (the SConstruct's first steps): the same arguments take its generation, run
    once, on another thread; other arguments generate on their own."""
    import threading
    a = os.path.join("build", "host", "m", "model.onnx")
    zoo_cache.prefetch("simplecnn", 0, list(SHAPE), a)
    calls = []
    proto = zoo_cache.materialize_async("simplecnn", 0, SHAPE, os.path.abspath(a),
                                        meanwhile=lambda: calls.append(threading.current_thread()))
    zoo_cache.write("simplecnn", 0, SHAPE, a)
    assert calls == [threading.main_thread()] and len(generated) == 1
    assert proto.SerializeToString(deterministic=True) == open(a, "rb").read() == _want()
    assert zoo_cache._AHEAD == {}
    zoo_cache.prefetch("simplecnn", 1, SHAPE, a)      # not asked for: left alone
    proto = zoo_cache.materialize_async("simplecnn", 2, SHAPE, a)
    assert proto is not None and list(zoo_cache._AHEAD) == [zoo_cache._arguments("simplecnn", 1, SHAPE, a)]
    zoo_cache._AHEAD.popitem()[1].result()            # the one ahead ends: each generated once
    assert sorted(args[1] for args in generated) == [0, 1, 2]


def test_what_the_generation_ahead_raised_is_raised_by_the_planning(generated, monkeypatch):
    def broken(*args):
        raise ValueError("input shape [1, 2] does not fit simplecnn")
    monkeypatch.setattr(zoo(), "build", broken)
    a = os.path.join("build", "host", "m", "model.onnx")
    zoo_cache.prefetch("simplecnn", 0, SHAPE, a)
    with pytest.raises(ValueError, match="does not fit"):
        zoo_cache.materialize_async("simplecnn", 0, SHAPE, a, meanwhile=lambda: None)
    assert zoo_cache._AHEAD == {} and not os.path.exists(a)


@pytest.mark.parametrize("name,shape", [("simplecnn", SHAPE), ("dscnn", None), ("mobilenetv2", (1, 3, 32, 32)),
                                        ("tfl_dscnn", None)])
def test_the_import_leaves_the_generated_proto_as_the_file_holds_it(generated, name, shape):
    """The planning imports and calibrates the generated proto, and the MODEL step
    serializes it afterwards: the file must still hold exactly the generator's bytes,
    generated once, and link to the cache entry.  The caller's own work runs on its thread
    beside the generator."""
    import threading

    from nnscons.manifest_schema import ModelConfig
    from nnscons.planning import model_cache
    cfg = ModelConfig(name=name, zoo=name, source=None, fmt="auto", seed=0, input_shape=shape,
                      calibration={} if name.startswith("tfl_") else {"count": 2, "seed": 0})
    folder = os.path.join("build", "host", name)
    path = zoo_cache.model_path(folder, name)
    called = []
    graph = model_cache.load_graph(cfg, os.getcwd(), folder, os.path.join(folder, "graph.pkl"),
                                   meanwhile=lambda: called.append(threading.current_thread()))
    zoo_cache.write(name, 0, shape, path)      # the MODEL step
    assert graph.layers and called == [threading.main_thread()] and len(generated) == 1
    want = zoo().ZOO[name].build(0, *([shape] if shape else []))
    want = want if isinstance(want, bytes) else want.SerializeToString(deterministic=True)
    entry = zoo_cache.entry_path(name, 0, shape, folder)
    assert open(path, "rb").read() == want and os.path.samefile(path, entry)
