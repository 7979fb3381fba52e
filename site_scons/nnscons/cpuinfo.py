"""The running CPU as /proc/cpuinfo describes it (its first CPU): what the host's kernel choices
key on (kernelgen.core_limits, targets/host/measure.py's cache)."""
from __future__ import annotations


_THIS_CPU: dict = {}     # this machine's, read once per process (a plan asks per layer)


def cpu_info(text: str | None = None) -> dict:
    """vendor, family, model, model name and flags of /proc/cpuinfo's first CPU (text:
    its content; default this machine's)."""
    if text is None:
        if not _THIS_CPU:
            try:
                with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
                    _THIS_CPU.update(cpu_info(f.read(16384)))
            except OSError:
                _THIS_CPU.update(cpu_info(""))
        return {k: list(v) if isinstance(v, list) else v for k, v in _THIS_CPU.items()}
    fields = {}
    for line in text.splitlines():
        key, _, value = line.partition(":")
        fields.setdefault(key.strip(), value.strip())
    return {"vendor": fields.get("vendor_id", "unknown"), "family": fields.get("cpu family", "?"),
            "model": fields.get("model", "?"), "model_name": fields.get("model name", "unknown"),
            "flags": sorted(set(fields.get("flags", "").split()))}


def l2_bytes(root: str = "/sys/devices/system/cpu/cpu0/cache") -> int | None:
    """One core's level-2 cache (data or unified) in bytes, as Linux's sysfs gives it; None
    where it does not say."""
    import glob
    units = {"K": 1024, "M": 1024 * 1024, "G": 1024 ** 3}
    for d in sorted(glob.glob(root + "/index*")):
        try:
            with open(d + "/level", encoding="ascii") as f:
                level = f.read().strip()
            with open(d + "/type", encoding="ascii") as f:
                kind = f.read().strip()
            with open(d + "/size", encoding="ascii") as f:
                size = f.read().strip()
        except OSError:
            continue
        if level == "2" and kind in ("Unified", "Data") and size:
            try:
                return int(size[:-1]) * units[size[-1]] if size[-1] in units else int(size)
            except ValueError:
                return None
    return None
