"""cache=DIR: two checkouts share build results, simulator and emulator runs included;
corrupt entries are rebuilt, a read-only cache is only read."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from conftest import SCONS, Project, _ignore, ROOT, as_unprivileged_user, steps

ARGS = ("target=gap9", "model=simplecnn", "platform=emul")


def _second_checkout(tmp_path) -> Project:
    dst = tmp_path / "second" / "proj"
    shutil.copytree(ROOT, dst, ignore=_ignore)
    return Project(dst)


def _outputs(project, rel):
    out = {}
    root = project.file(rel)
    for dirpath, _, files in os.walk(root):
        for f in files:
            if f.startswith((".sconsign", ".lock")) or f == "compile_commands.json":
                continue
            p = os.path.join(dirpath, f)
            if "/cache/" in p:
                continue
            with open(p, "rb") as fh:
                out[os.path.relpath(p, root)] = fh.read()
    return out


def test_a_second_checkout_builds_from_the_cache(project, tmp_path):
    cache = str(tmp_path / "shared-cache")
    first = project.scons(*ARGS, f"cache={cache}", "-j2")
    assert "Test PASSED [gap9] simplecnn" in first.stdout
    other = _second_checkout(tmp_path)
    second = other.scons(*ARGS, f"cache={cache}", "-j2")
    # no compiler, no emulator run, no codegen: everything retrieved
    assert steps(second.stdout) == [], steps(second.stdout)
    assert "Retrieved `build/gap9/simplecnn/emul/run.log' from cache" in second.stdout
    assert "Test PASSED [gap9] simplecnn" in second.stdout
    assert _outputs(project, "build/gap9") == _outputs(other, "build/gap9")


@pytest.mark.slow   # 12.0 s of CPU: two cold builds
def test_a_corrupt_entry_is_rebuilt_not_trusted(project, tmp_path):
    cache = tmp_path / "c"
    project.scons("model=simplecnn", f"cache={cache}")
    other = _second_checkout(tmp_path)
    # truncate the cached object of conv2 (found by its content)
    obj = project.read("build/host/simplecnn/obj/layers/conv2.o", "rb")
    entry = next(os.path.join(d, f) for d, _, fs in os.walk(cache) for f in fs
                 if not f.endswith(".sha256") and f != "config"
                 and open(os.path.join(d, f), "rb").read() == obj)
    with open(entry, "r+b") as f:
        f.truncate(len(obj) // 2)
    proc = other.scons("model=simplecnn", f"cache={cache}")
    assert steps(proc.stdout) == ["CC conv2"], proc.stdout
    assert "Test PASSED [host] simplecnn" in proc.stdout
    assert other.read("build/host/simplecnn/obj/layers/conv2.o", "rb") == obj
    assert open(entry, "rb").read() == obj          # the entry was replaced by a good one


@pytest.mark.slow   # 13.0 s of CPU
def test_a_read_only_cache_is_only_read(project, tmp_path):
    cache = tmp_path / "ro"
    project.scons("model=simplecnn", f"cache={cache}")
    other = _second_checkout(tmp_path)
    text = other.read("targets.yaml").replace("conv1: {l1_budget: 8KiB}", "conv1: {l1_budget: 3KiB}")
    other.write("targets.yaml", text)
    prefix = as_unprivileged_user(other)
    os.makedirs(other.file("build"), exist_ok=True)
    os.chmod(other.file("build"), 0o777)
    if prefix:      # root's cache, beside the moved checkout: readable, not writable, by the user
        cache = shutil.move(cache, os.path.join(os.path.dirname(other.path), "ro"))
        for d, _, fs in os.walk(cache):
            os.chmod(d, 0o755)
            for f in fs:
                os.chmod(os.path.join(d, f), 0o644)
    else:
        for d, _, _ in os.walk(cache):
            os.chmod(d, 0o555)
    before = sorted(os.path.join(d, f) for d, _, fs in os.walk(cache) for f in fs)
    try:
        env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1", HOME="/tmp")
        proc = subprocess.run(prefix + [sys.executable, SCONS, "-Q", "model=simplecnn", f"cache={cache}"],
                              cwd=other.path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True, timeout=600)
    finally:
        for d, _, _ in os.walk(cache):
            os.chmod(d, 0o755)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "Test PASSED [host] simplecnn" in proc.stdout
    assert "CODEGEN conv1" in steps(proc.stdout) and "CC conv2" not in steps(proc.stdout)
    assert sorted(os.path.join(d, f) for d, _, fs in os.walk(cache) for f in fs) == before


def _build_outputs(project):
    return {k: v for k, v in project.build_outputs().items() if not k.endswith(("output.bin", ".html"))}


@pytest.mark.slow
def test_four_builds_of_two_models_share_one_cache_at_once(project, tmp_path):
    """Two checkouts x two models, all four builds at once against one cache, ten rounds:
    rounds on a fresh cache race to publish the same entries, rounds on the warm one race
    readers against the digests being rewritten.  Every build passes, nothing partial is
    left in the cache, and the two checkouts' outputs are byte-identical."""
    checkouts = [project, _second_checkout(tmp_path)]
    models = ("simplecnn", "ic_resnet8")
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    for rnd in range(10):
        cache = tmp_path / f"cache{rnd // 2}"           # a fresh cache every other round
        full = rnd == 9                                  # the last round: runs and checks too
        procs = []
        for c in checkouts:
            shutil.rmtree(c.file("build"), ignore_errors=True)
        for c in checkouts:
            for m in models:
                args = [sys.executable, SCONS, "-Q", f"model={m}", f"cache={cache}"] + ([] if full else ["library"])
                procs.append((c, m, subprocess.Popen(args, cwd=c.path, env=env, stdout=subprocess.PIPE,
                                                     stderr=subprocess.STDOUT, text=True)))
        for c, m, p in procs:
            out, _ = p.communicate(timeout=900)
            assert p.returncode == 0, f"round {rnd}, {m} in {c.path}:\n{out[-3000:]}"
            if full:
                assert f"Test PASSED [host] {m}" in out, out[-2000:]
        left = [f for d, _, fs in os.walk(cache) for f in fs if ".tmp." in f or ".sha256." in f]
        assert left == [], left
        assert _build_outputs(checkouts[0]) == _build_outputs(checkouts[1]), f"round {rnd}"


def test_builds_that_start_together_on_a_new_cache_folder_do_not_race_for_its_config(tmp_path):
    """The round-8 failure of the test above: two builds both found an empty cache folder
    (made by nnscons before SCons) and both created its config; the second got
    FileExistsError.  The folder is now SCons's to create in one rename, and a config that
    appears between the check and the create is taken as written."""
    sys.path.insert(0, os.path.join(ROOT, "site_scons"))
    from nnscons.builders.graph.cache import VerifiedCacheDir
    empty = tmp_path / "empty"
    empty.mkdir()
    first = VerifiedCacheDir(str(empty))          # finds no config, writes it
    os.remove(empty / "CACHEDIR.TAG")
    late = VerifiedCacheDir.__new__(VerifiedCacheDir)
    late.config = {}
    late._add_config(str(empty))                  # the loser of the race: no exception
    assert first.config["prefix_len"] >= 1
    fresh = tmp_path / "parent" / "cache"
    import SCons.Environment
    from nnscons.builders.graph import cache
    env = SCons.Environment.Environment(tools=[])
    cache.enable(env, str(fresh))
    env.get_CacheDir()
    assert (fresh / "config").is_file()
