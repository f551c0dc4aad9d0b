"""Memory sizes on the driver: the machine's physical memory and Spark's size strings."""
from __future__ import annotations


def physical_memory_bytes() -> int:
    import os

    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # pragma: no cover - non-POSIX
        return 8 << 30


def parse_bytes(text: str) -> int:
    """Parse a Spark memory string ('512m', '2g', '1024') into bytes (plain numbers are MiB)."""
    s = str(text).strip().lower()
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
    if s.endswith("b"):
        s = s[:-1]
    if s and s[-1] in units:
        return int(float(s[:-1]) * units[s[-1]])
    return int(float(s) * (1 << 20))

