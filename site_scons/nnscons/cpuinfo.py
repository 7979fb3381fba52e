"""The running CPU as /proc/cpuinfo describes it (its first CPU): what the host's kernel choices
key on (kernelgen.core_limits, targets/host/measure.py's cache)."""
from __future__ import annotations


def cpu_info(text: str | None = None) -> dict:
    """vendor, family, model, model name and flags of /proc/cpuinfo's first CPU (text:
    its content; default this machine's)."""
    if text is None:
        try:
            with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
                text = f.read(16384)
        except OSError:
            text = ""
    fields = {}
    for line in text.splitlines():
        key, _, value = line.partition(":")
        fields.setdefault(key.strip(), value.strip())
    return {"vendor": fields.get("vendor_id", "unknown"), "family": fields.get("cpu family", "?"),
            "model": fields.get("model", "?"), "model_name": fields.get("model name", "unknown"),
            "flags": sorted(set(fields.get("flags", "").split()))}
