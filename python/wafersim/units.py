"""Quantities written with a unit ("857.986 MHz", "16 KiB", "2 cycles") as numbers in the base
unit wafersim keeps them in (Hz, B, b/s, s, cycles, params/s)."""

import re

_QUANTITY = re.compile(r"^\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*([A-Za-z/]+)\s*$")
_PREFIXES = {"": 1.0, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "m": 1e-3, "u": 1e-6, "n": 1e-9,
             "p": 1e-12, "Ki": 2.0**10, "Mi": 2.0**20, "Gi": 2.0**30, "Ti": 2.0**40}
_BASES = {"params/s": "params/s", "cycles": "cycles", "cycle": "cycles", "b/s": "b/s", "bit/s": "b/s",
          "B/s": "B/s", "Hz": "Hz", "B": "B", "bit": "bit", "s": "s"}


def to_base_units(text):
    """(number, unit) for text such as "1.2 GHz" -> (1.2e9, "Hz"); None when it is not a quantity.
    Plain numbers give (number, "")."""
    if isinstance(text, (int, float)):
        return float(text), ""
    try:
        return float(text), ""
    except (TypeError, ValueError):
        pass
    m = _QUANTITY.match(str(text))
    if not m:
        return None
    value, unit = float(m.group(1)), m.group(2)
    for base in sorted(_BASES, key=len, reverse=True):
        prefix = unit[: len(unit) - len(base)]
        if unit.endswith(base) and prefix in _PREFIXES:
            return value * _PREFIXES[prefix], _BASES[base]
    return None
