"""What sim_control's acres_interfaces services share: the generated types (absent in a workspace
without acres_interfaces: IMPORT_ERROR says why), and the answer every one of them gives: success,
or success false with the reason in message and one ERROR line."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from acres_sim.game.control_client import ControlRefused, ControlUnavailable

try:
    from acres_interfaces import msg as acres_msg
    from acres_interfaces import srv as acres_srv
except ImportError as exc:  # a workspace without acres_interfaces
    acres_msg = acres_srv = None
    IMPORT_ERROR: str | None = str(exc)
else:
    IMPORT_ERROR = None


def answering(logger: Any, name: str, handler: Callable[[Any, Any], None]) -> Callable[[Any, Any], Any]:
    """The service callback of handler(request, response)."""
    def call(request: Any, response: Any) -> Any:
        try:
            handler(request, response)
            response.success = True
        except (ControlUnavailable, ControlRefused) as exc:
            response.success = False
            response.message = str(exc)
            logger.error(f"{name}: {exc}")
        except Exception as exc:  # noqa: BLE001 -- e.g. a malformed answer: say so, keep serving
            response.success = False
            response.message = f"{type(exc).__name__}: {exc}"
            logger.error(f"{name}: {response.message}")
        return response
    return call
