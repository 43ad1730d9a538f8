"""Publishing serialized CDR, and waiting for acknowledgements, without holding the GIL (needs rclpy).

rclpy's publish() holds the GIL through the middleware's whole write, for a 1.4 MB image about
0.5 ms with one subscriber; meanwhile the reader thread cannot read the socket or publish /clock.
rcl itself takes serialized messages (rcl_publish_serialized_message, what rclpy's publish(bytes)
calls), so CdrPublisher calls it through ctypes, which lets go of the GIL for the call.
The library is the librcl that rclpy has loaded (found in /proc/self/maps): the same code and
state, only another way in. Where it cannot be found (not Linux, an rclpy without the publisher's
`pointer`), publish() falls back to rclpy's publish(bytes): the same bytes on the wire, only with
the GIL held. wait_for_all_acked() is rcl_publisher_wait_for_all_acked the same way: rclpy's
Publisher.wait_for_all_acked holds the GIL while it blocks, which would stall the stream reader.
"""

from __future__ import annotations

import ctypes
import functools
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any


class _SerializedMessage(ctypes.Structure):
    """rcl_serialized_message_t (rcutils_uint8_array_t): buffer, length, capacity, allocator."""

    _fields_ = [("buffer", ctypes.c_char_p), ("buffer_length", ctypes.c_size_t),
                ("buffer_capacity", ctypes.c_size_t), ("allocator", ctypes.c_void_p * 5)]


class _ErrorString(ctypes.Structure):
    _fields_ = [("text", ctypes.c_char * 1024)]  # rcutils_error_string_t


class _Rcl:
    def __init__(self, rcl: ctypes.CDLL, rcutils: ctypes.CDLL):
        self.publish = rcl.rcl_publish_serialized_message
        self.publish.argtypes = [ctypes.c_void_p, ctypes.POINTER(_SerializedMessage), ctypes.c_void_p]
        self.publish.restype = ctypes.c_int
        self.wait_acked = rcl.rcl_publisher_wait_for_all_acked
        self.wait_acked.argtypes = [ctypes.c_void_p, ctypes.c_int64]  # timeout in ns
        self.wait_acked.restype = ctypes.c_int
        self.error = rcutils.rcutils_get_error_string
        self.error.restype = _ErrorString
        self.reset = rcutils.rcutils_reset_error


_RCL_RET_OK = 0
_RCL_RET_TIMEOUT = 2
# One blocking call waits at most this long, so that a stopping node is not held up by a wait.
_ACK_WAIT_SLICE_S = 0.05
_ACK_POLL_S = 0.0005  # the fallback's sleep between two non-blocking checks


# Below this size the middleware's write is shorter than handing the GIL to another thread and
# winning it back (INS and /clock messages are a few hundred bytes; clouds and images a megabyte).
RELEASE_GIL_FROM = 64 * 1024


def _loaded_library(name: str) -> str | None:
    """The path of a shared library this process has mapped, e.g. 'librcl.so'."""
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                path = line.rsplit(None, 1)[-1]
                if path.endswith("/" + name):
                    return path
    except OSError:
        pass
    return None


@functools.cache
def _load_rcl() -> tuple[_Rcl | None, str]:
    """librcl through ctypes, or None and why not."""
    import rclpy  # noqa: F401 -- loads librcl, which this then finds

    rcl, rcutils = _loaded_library("librcl.so"), _loaded_library("librcutils.so")
    if not (rcl and rcutils):
        return None, "librcl.so / librcutils.so not found in /proc/self/maps"
    try:
        return _Rcl(ctypes.CDLL(rcl), ctypes.CDLL(rcutils)), ""
    except (OSError, AttributeError) as exc:
        return None, f"{rcl} not usable through ctypes ({exc})"


def _load() -> _Rcl | None:
    return _load_rcl()[0]


def releases_gil() -> bool:
    """Whether publish() lets go of the GIL here (else it is rclpy's publish(bytes))."""
    return _load() is not None


def why_gil_is_held(publisher: Any) -> str | None:
    """None when publishing through `publisher` releases the GIL, else one line saying why not and
    what it costs (for one WARN at start: the fallback is correct, only slower)."""
    rcl, reason = _load_rcl()
    if rcl is not None and not hasattr(publisher.handle, "pointer"):
        reason = "this rclpy's publisher handle has no `pointer`"
    elif rcl is not None:
        return None
    return (f"clouds, images and the barrier's acknowledgement wait go through rclpy with the GIL held "
            f"({reason}): the same bytes, but the stream reader and /clock wait meanwhile")


class CdrPublisher:
    """publish(cdr) for one rclpy publisher; `cdr` is one message serialized, with its
    encapsulation header (the bytes rclpy.serialization.serialize_message returns). One thread
    publishes through one CdrPublisher (it reuses one rcl message struct)."""

    def __init__(self, publisher: Any):
        self.publisher = publisher
        handle = publisher.handle
        self._rcl = _load() if hasattr(handle, "pointer") else None
        self._message = _SerializedMessage()

    def publish(self, cdr: bytes | bytearray) -> None:
        rcl = self._rcl
        if rcl is None or len(cdr) < RELEASE_GIL_FROM:
            self.publisher.publish(bytes(cdr))
            return
        message = self._message
        # The message's own buffer, no copy, set as an address: a ctypes object assigned to the field
        # would stay referenced by the struct after the call, and with it `cdr`, which the stream
        # reader takes again for its next payload once nothing refers to it (a cloud built in place).
        # A bytearray (a template whose stamp is written in place, a cloud or image built in place) is
        # pinned by a ctypes view until rcl has returned (it cannot be resized meanwhile); its address,
        # not ctypes.cast of the view, which would keep the view, and so `cdr`, alive after the call.
        if isinstance(cdr, bytes):
            pinned: Any = cdr
            message.buffer = ctypes.cast(cdr, ctypes.c_void_p).value
        else:
            pinned = (ctypes.c_char * len(cdr)).from_buffer(cdr)
            message.buffer = ctypes.addressof(pinned)
        message.buffer_length = message.buffer_capacity = len(cdr)
        handle = self.publisher.handle
        with handle:  # the publisher cannot be destroyed while rcl uses it
            ret = rcl.publish(handle.pointer, ctypes.byref(message), None)
        del pinned
        message.buffer = 0
        if ret != 0:
            text = rcl.error().text.decode(errors="replace")
            rcl.reset()
            raise RuntimeError(f"failed to publish on {self.publisher.topic_name}: {text} (rcl {ret})")


def wait_for_all_acked(publishers: Iterable[Any], timeout_s: float,
                       stop: threading.Event | None = None) -> bool:
    """Wait until every sample of every rclpy publisher given has been acknowledged by its
    reliable subscribers (best-effort publishers count as acknowledged). True when they all were
    within `timeout_s`; False after the timeout or once `stop` is set.

    Through rcl with the GIL released, in slices of at most 50 ms; where librcl cannot be reached,
    non-blocking checks through rclpy with short sleeps in between (which hold the GIL only for the
    checks)."""
    deadline = time.monotonic() + timeout_s
    rcl = _load()
    zero = None
    for publisher in publishers:
        handle = publisher.handle
        direct = rcl is not None and hasattr(handle, "pointer")
        while True:
            left = deadline - time.monotonic()
            if stop is not None and stop.is_set():
                return False
            if direct:
                with handle:  # the publisher cannot be destroyed while rcl uses it
                    ret = rcl.wait_acked(handle.pointer, int(max(0.0, min(left, _ACK_WAIT_SLICE_S)) * 1e9))
                if ret == _RCL_RET_OK:
                    break
                if ret != _RCL_RET_TIMEOUT:  # e.g. unsupported by this middleware: ask rclpy
                    rcl.reset()
                    direct = False
                    continue
            else:
                if zero is None:
                    from rclpy.duration import Duration
                    zero = Duration(seconds=0)
                if publisher.wait_for_all_acked(zero):
                    break
                time.sleep(min(_ACK_POLL_S, max(left, 0.0)))
            if left <= 0:
                return False
    return True


def wait_until_acked(publishers: list[Any], stop: threading.Event,
                     still_waiting: Callable[[list[str], float], None], report_every_s: float = 1.0) -> bool:
    """Wait, without a bound, until every sample of `publishers` is acknowledged; every
    report_every_s, still_waiting(topics that wait, seconds so far). A reader that vanishes is
    unmatched by the middleware and stops counting. False only once `stop` is set."""
    start = time.monotonic()
    while not wait_for_all_acked(publishers, report_every_s, stop):
        if stop.is_set():
            return False
        waiting = [p.topic_name for p in publishers if not wait_for_all_acked([p], 0.0, stop)]
        if waiting:
            still_waiting(waiting, time.monotonic() - start)
    return True
