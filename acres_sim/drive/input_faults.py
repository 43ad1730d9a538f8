"""What the vehicle_bridge's inputs asked that the vehicle could not do (ROS-free): values applied at
a limit and inputs refused, counted per input and field for /diagnostics, and the log line each
deserves (one per input every 2 s for a limit, one per input and fault every 2 s for a refusal)."""

from __future__ import annotations

from collections.abc import Sequence

from acres_sim.drive.driver import Limited, Refused
from acres_sim.net.log_limiter import LogLimiter

MAX_KINDS = 64  # refusal kinds counted: they are few, and the count stays bounded whatever comes


class InputFaults:
    def __init__(self, period_s: float = 2.0):
        self.period_s = period_s
        self.saturated: dict[str, int] = {}
        self.refusals: dict[str, int] = {}
        self._limits = LogLimiter(period_s)
        self._refusals = LogLimiter(period_s)

    def limited(self, what: str, limited: Sequence[Limited], now: float) -> str | None:
        """Count what `what` asked beyond the limits; the WARN line to log, or None (said lately)."""
        for item in limited:
            key = f"{what} {item.field}"
            self.saturated[key] = self.saturated.get(key, 0) + 1
        silenced = self._limits.allow(what)
        if silenced is None:
            return None
        more = f" ({silenced} more like it in the last {self.period_s:g} s)" if silenced else ""
        return (f"{what} beyond the vehicle's limits at world time {now:.3f} s: "
                f"{'; '.join(map(str, limited))}{more}")

    def refused(self, what: str, exc: Refused) -> str | None:
        """Count a refusal; the WARN line to log, or None."""
        key = f"{what} {exc.kind}"
        if key in self.refusals or len(self.refusals) < MAX_KINDS:
            self.refusals[key] = self.refusals.get(key, 0) + 1
        silenced = self._refusals.allow((what, exc.kind))
        if silenced is None:
            return None
        return f"{what} refused: {exc}" + (f" ({silenced} more like it)" if silenced else "")

    def summary(self) -> tuple[bool, str, list[tuple[str, int]]]:
        """(any fault, the status message, (key, count) per input and field) for /diagnostics."""
        saturated, refused = sum(self.saturated.values()), sum(self.refusals.values())
        message = (f"{saturated} inputs applied at a limit, {refused} refused" if saturated or refused
                   else "every input within the vehicle's limits")
        values = [(f"{kind}: {k}", n)
                  for kind, counts in (("saturated", self.saturated), ("refused", self.refusals))
                  for k, n in sorted(counts.items())]
        return bool(saturated or refused), message, values
