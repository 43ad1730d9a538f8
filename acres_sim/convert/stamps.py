"""World time in seconds -> ROS 2 stamps (sec, nanosec), exactly (ROS-free)."""

from __future__ import annotations

import math

from acres_sim.stream.protocol import ProtocolError

_NS_PER_S = 1_000_000_000
_INT32_MIN = -(2**31)
_INT32_MAX = 2**31 - 1


def stamp_to_sec_nanosec(stamp_s: float) -> tuple[int, int]:
    """Stamp in seconds -> (sec, nanosec), rounded to the nearest nanosecond (ties to even).

    Exact: it works on the binary value of the double as a ratio of integers, so there is no
    rounding of an intermediate product and no drift; negative stamps give sec < 0 and
    nanosec in [0, 1e9), as builtin_interfaces/Time wants. For every positive stamp whose
    fraction times 1e9 is not within 1e-7 ns of a half nanosecond this equals
    sec = floor(stamp), nanosec = round((stamp - sec) * 1e9) with carry.
    """
    stamp = float(stamp_s)
    if not math.isfinite(stamp):
        raise ProtocolError(f"stamp {stamp!r} is not a finite number of seconds")
    numerator, denominator = stamp.as_integer_ratio()  # denominator is a power of two
    total_ns, remainder = divmod(numerator * _NS_PER_S, denominator)  # floor, remainder >= 0
    twice = 2 * remainder
    if twice > denominator or (twice == denominator and total_ns & 1):
        total_ns += 1
    sec, nanosec = divmod(total_ns, _NS_PER_S)
    if not _INT32_MIN <= sec <= _INT32_MAX:
        raise ProtocolError(f"stamp {stamp!r} s does not fit builtin_interfaces/Time (int32 seconds)")
    return sec, nanosec
