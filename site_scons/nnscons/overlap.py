"""Two things at once on a 2-core machine: work that releases the GIL (onnxruntime's
session and passes, NumPy's random fills, hashing and writing files) on another thread
while this one does Python work the build needs next."""
from __future__ import annotations

import threading


class Ahead:
    """work() started on another thread now; result() waits for it.  The thread is not a
    daemon: an interrupted build lets work end (an onnxruntime pass, an atomic write)
    before the process exits."""

    def __init__(self, work, name: str = "nnscons-beside"):
        self._result = []

        def run():
            try:
                self._result.append((True, work()))
            except BaseException as e:       # noqa: BLE001 - raised again by result()
                self._result.append((False, e))
        self._thread = threading.Thread(target=run, name=name)
        self._thread.start()

    def result(self, meanwhile=None):
        """work()'s result, after meanwhile() on this thread; what work raised is raised here
        (after meanwhile: a head start only, what it raises it raises after work ended)."""
        try:
            if meanwhile is not None:
                meanwhile()
        finally:
            self._thread.join()
        ok, value = self._result[0]
        if not ok:
            raise value
        return value


def beside(work, meanwhile, name: str = "nnscons-beside"):
    """work()'s result, work run on another thread while this one calls meanwhile()."""
    return Ahead(work, name).result(meanwhile)


def in_turn(*calls):
    """One callable that makes each of `calls` in turn (None: skipped; none: does nothing),
    for a meanwhile made of several pieces of work."""
    def run():
        for call in calls:
            if call is not None:
                call()
    return run
