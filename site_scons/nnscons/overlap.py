"""Two things at once on a 2-core machine: work that releases the GIL (onnxruntime's
session and passes, NumPy's random fills, hashing and writing files) on another thread
while this one does Python work the build needs next."""
from __future__ import annotations

import threading


def beside(work, meanwhile, name: str = "nnscons-beside"):
    """work()'s result, work run on another thread while this one calls meanwhile().  What
    work raised is raised here, after meanwhile (a head start only: what it raises, it
    raises after work ended).  The thread is not a daemon: an interrupted build lets work
    end (an onnxruntime pass, an atomic write) before the process exits."""
    result = []

    def run():
        try:
            result.append((True, work()))
        except BaseException as e:       # noqa: BLE001 - raised again on the caller's thread
            result.append((False, e))
    thread = threading.Thread(target=run, name=name)
    thread.start()
    try:
        meanwhile()
    finally:
        thread.join()
    ok, value = result[0]
    if not ok:
        raise value
    return value
