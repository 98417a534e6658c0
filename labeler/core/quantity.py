"""Kubernetes resource quantities, parsed exactly; Kueue's integer units; whole counts.

One parser for the whole project (pure). The placement simulator must count pods per node
exactly as Kueue does, and Kueue compares integers:
CPU in millicores (``Quantity.MilliValue``), everything else in whole units
(``Quantity.Value``), both rounded up (``ResourceValue`` in kueue ``pkg/resources``). A
float would turn ``0.1`` CPU into 99 millicores on a bad day; ``Fraction`` does not.

Grammar (k8s.io/apimachinery ``resource.ParseQuantity``):
``<sign><digits>[.<digits>]<suffix>`` where suffix is a binary SI suffix
(Ki Mi Gi Ti Pi Ei), a decimal SI suffix (n u m "" k M G T P E) or a decimal exponent
(``e3``, ``E-2``).
"""

from __future__ import annotations

import math
import re
from fractions import Fraction
from functools import lru_cache

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 10**3),
    "": Fraction(1),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
}
_QUANTITY = re.compile(r"^([+-]?)(\d+(?:\.\d*)?|\.\d+)(.*)$")
_EXPONENT = re.compile(r"^[eE]([+-]?\d+)$")

# Far beyond any real amount (int64 holds 9.2e18; Kueue counts in int64), yet small enough
# that exact arithmetic stays instant: ``1e999999999`` would build a billion-digit integer.
MAX_EXPONENT = 30
MAX_DIGITS = 40

CPU = "cpu"
PODS = "pods"


class QuantityError(ValueError):
    """A string that is not a Kubernetes quantity."""


def parse_quantity(text: str) -> Fraction:
    """The exact value of a quantity string such as ``500m``, ``16Gi``, ``1.5``, ``2e3``."""
    s = text.strip() if isinstance(text, str) else str(text)
    m = _QUANTITY.match(s)
    if not m:
        raise QuantityError(
            f"{text!r} is not a Kubernetes quantity (examples: 8, 500m, 16Gi, 1.5, 2e3)"
        )
    sign, number, suffix = m.groups()
    if len(number) > MAX_DIGITS:
        raise _too_large(text, f"more than {MAX_DIGITS} digits")
    value = Fraction(number)
    if suffix in _BINARY:
        value *= _BINARY[suffix]
    elif suffix in _DECIMAL:
        value *= _DECIMAL[suffix]
    elif e := _EXPONENT.match(suffix):
        digits = e.group(1).lstrip("+-").lstrip("0")
        if len(digits) > 2 or int(digits or 0) > MAX_EXPONENT:
            raise _too_large(text, f"an exponent beyond ±{MAX_EXPONENT}")
        value *= Fraction(10) ** int(e.group(1))
    else:
        raise QuantityError(
            f"{text!r}: unknown suffix {suffix!r} (use Ki, Mi, Gi, Ti, Pi, Ei, "
            "n, u, m, k, M, G, T, P, E or an exponent such as e3)"
        )
    return -value if sign == "-" else value


def _too_large(text: str, why: str) -> QuantityError:
    shown = text if len(text) <= 40 else f"{text[:20]}…({len(text)} characters)"
    return QuantityError(f"{shown!r} is too large or too precise to be a quantity ({why})")


@lru_cache(maxsize=4096)
def parse_count(text: str) -> int | None:
    """A quantity as a whole count, for extended resources (GPUs, NPUs are whole numbers):
    the floor of the exact value, or None when ``text`` is not a quantity (callers ignore
    such a value and say so). Cached like :func:`quantity_units`: the audit reads every
    node's allocatable on every list, and clusters repeat a handful of values."""
    try:
        return math.floor(parse_quantity(text))
    except QuantityError:
        return None


def to_units(resource: str, value: Fraction) -> int:
    """Kueue's integer for a quantity: millicores for ``cpu``, whole units otherwise.

    Rounded away from zero, like ``Quantity.Value``/``MilliValue`` (kueue
    ``resources.ResourceValue``).
    """
    scaled = value * 1000 if resource == CPU else value
    return math.ceil(scaled) if scaled >= 0 else -math.ceil(-scaled)


@lru_cache(maxsize=4096)
def quantity_units(resource: str, text: str) -> int:
    """Parse a quantity string straight into Kueue's units for ``resource``.

    Cached: a cluster repeats a handful of quantities across tens of thousands of pods, and
    exact parsing is the most expensive step of reading a big snapshot.
    """
    return to_units(resource, parse_quantity(text))


def format_units(resource: str, units: int) -> str:
    """A readable quantity for Kueue units (``4`` GPUs, ``500m`` CPU, ``16Gi`` memory)."""
    if resource == CPU:
        return str(units // 1000) if units % 1000 == 0 else f"{units}m"
    if units and ("memory" in resource or "storage" in resource):
        for suffix in ("Ei", "Pi", "Ti", "Gi", "Mi", "Ki"):
            if units % _BINARY[suffix] == 0:
                return f"{units // _BINARY[suffix]}{suffix}"
    return str(units)
