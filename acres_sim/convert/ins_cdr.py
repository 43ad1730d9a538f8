"""One INS epoch -> its six messages as serialized CDR, the bytes publish() sends as they are (ROS-free).

For the six messages of an epoch, 100 times a second, rclpy's field-by-field conversion was a
third of what the bridge spent beyond the middleware itself. Each message is built here from a few
constant byte strings (acres_sim.convert.cdr) and one float64 block gathered from the epoch with numpy.

What goes where (interface: INS topics):
- ins/fix: lat, lon, height; status = FixStatus capped at GBAS_FIX with a diagonal covariance from
  CovE/N/U when they are finite (else unknown); NO_FIX without lat/lon or with a negative status;
- ins/imu: EnuQ, gyro, accel, the covariances from the parameters;
- ins/odom: EnuX..Z + EnuQ, pose covariance CovE/N/U (0 where NaN) and the orientation
  parameter, twist Vel + Gyro; ins/odom_utm the same with the UTM pose, only while it is finite;
- ground_truth/odom: TruthEnu + TruthQ, twist.linear.x = TruthSpeed, covariances 0;
- /tf: world -> base_footprint from the INS (ins) or the truth (ground_truth), none for "none".
"""

from __future__ import annotations

import math
import struct
from typing import NamedTuple

import numpy as np

from acres_sim.cdr_encoding import ENCAPSULATION, align
from acres_sim.convert.cdr import STAMP, STAMP_AT, Layout
from acres_sim.stream.protocol import Ins

_ONE_TRANSFORM = struct.pack("<I", 1)  # tf2_msgs/TFMessage: a sequence of one TransformStamped
TF_STAMP_AT = STAMP_AT + len(_ONE_TRANSFORM)  # that of a TFMessage's first transform

# NavSatStatus / NavSatFix constants (sensor_msgs)
STATUS_NO_FIX, STATUS_GBAS_FIX, SERVICE_GPS = -1, 2, 1
COVARIANCE_TYPE_UNKNOWN, COVARIANCE_TYPE_DIAGONAL_KNOWN = 0, 2

# Slots of the epoch vector: the 40 INS values, then what the messages take besides them.
_ZERO = 40
_POSE_COV = 41  # CovE, CovN, CovU with NaN as 0 (unknown), never NaN in a covariance
_ODOM_ORIENTATION, _ODOM_LINEAR, _ODOM_ANGULAR = 44, 45, 46
_IMU_ORIENTATION, _IMU_GYRO, _IMU_ACCEL = 47, 48, 49
_SLOTS = 50
# The epoch's fields that encode() reads, as plain ints and slices (an Enum lookup per epoch costs)
_COV = slice(int(Ins.CovE), int(Ins.CovU) + 1)
_UTM = slice(int(Ins.UtmE), int(Ins.UtmQw) + 1)
_LAT, _LON, _FIX_STATUS = int(Ins.Lat), int(Ins.Lon), int(Ins.FixStatus)


class InsCdr(NamedTuple):
    """The serialized messages of one epoch (bytes); None where the epoch publishes nothing."""

    fix: bytes
    imu: bytes
    odom: bytes
    odom_utm: bytes | None  # None while not georeferenced (any UTM value NaN)
    ground_truth: bytes
    tf: bytes | None  # None when tf_source is "none"


def _span(first: Ins, count: int) -> list[int]:
    return list(range(int(first), int(first) + count))


def _diagonal(n: int, slots: list[int]) -> list[int]:
    """A row-major n x n matrix: `slots` on the diagonal, 0 elsewhere."""
    out = [_ZERO] * (n * n)
    out[:: n + 1] = slots
    return out


def _after_header(offset: int, frame_id: str, *strings: str) -> bytes:
    """The header's frame_id and any strings after it, padded to the float64s that follow."""
    layout = Layout(offset)
    for text in (frame_id, *strings):
        layout.string(text)
    layout.pad(8)
    return layout.take()


class InsEncoder:
    """Serializes the messages of INS epochs for one stream's frame names and parameters."""

    def __init__(self, *, ins_frame: str, base_frame: str, world_frame: str, utm_frame: str,
                 tf_source: str, odom_orientation_variance: float, odom_linear_velocity_variance: float,
                 odom_angular_velocity_variance: float, imu_orientation_variance: float,
                 imu_angular_velocity_variance: float, imu_linear_acceleration_variance: float):
        self._epoch = np.zeros(_SLOTS, "<f8")  # little endian whatever the host: the gathers keep it
        self._epoch[_ODOM_ORIENTATION:] = (odom_orientation_variance, odom_linear_velocity_variance,
                                           odom_angular_velocity_variance, imu_orientation_variance,
                                           imu_angular_velocity_variance, imu_linear_acceleration_variance)
        start = STAMP.size  # every message but the TFMessage opens with its header's stamp

        # NavSatFix: header, status (int8 status, uint16 service), lat, lon, alt, covariance[9],
        # uint8 covariance type.
        layout = Layout(start)
        layout.string(ins_frame)
        self._fix_frame = layout.take()
        status_at = layout.offset
        service_at = align(status_at + 1, 2)
        floats_at = align(service_at + 2, 8)
        self._fix_status = struct.Struct(f"<b{service_at - status_at - 1}xH{floats_at - service_at - 2}x")
        geo = _span(Ins.Lat, 3)
        # the epoch slots of each message's float64 block, gathered together below
        blocks = {"fix_known": geo + _diagonal(3, _span(Ins.CovE, 3)),
                  "fix_unknown": geo + _diagonal(3, [_ZERO] * 3)}

        # Imu: header, orientation, covariance[9], angular velocity, covariance[9], linear
        # acceleration, covariance[9]: one float64 block after the header.
        self._imu_frame = _after_header(start, ins_frame)
        blocks["imu"] = (_span(Ins.EnuQx, 4) + _diagonal(3, [_IMU_ORIENTATION] * 3)
                         + _span(Ins.GyroX, 3) + _diagonal(3, [_IMU_GYRO] * 3)
                         + _span(Ins.AccelX, 3) + _diagonal(3, [_IMU_ACCEL] * 3))

        # Odometry: header, child_frame_id, pose (position, orientation, covariance[36]), twist
        # (linear, angular, covariance[36]): one float64 block after the strings.
        pose_cov = _diagonal(6, [_POSE_COV, _POSE_COV + 1, _POSE_COV + 2] + [_ODOM_ORIENTATION] * 3)
        twist = (_span(Ins.VelX, 3) + _span(Ins.GyroX, 3)
                 + _diagonal(6, [_ODOM_LINEAR] * 3 + [_ODOM_ANGULAR] * 3))
        self._odom_frames = _after_header(start, world_frame, base_frame)
        blocks["odom"] = _span(Ins.EnuX, 3) + _span(Ins.EnuQx, 4) + pose_cov + twist
        self._utm_frames = _after_header(start, utm_frame, base_frame)
        blocks["utm"] = _span(Ins.UtmE, 7) + pose_cov + twist
        blocks["truth"] = (_span(Ins.TruthEnuX, 7) + _diagonal(6, [_ZERO] * 6)
                           + [int(Ins.TruthSpeed)] + [_ZERO] * 5 + _diagonal(6, [_ZERO] * 6))

        # TFMessage: a sequence of one TransformStamped: header, child_frame_id, translation, rotation.
        self._has_tf = tf_source != "none"
        if self._has_tf:
            self._tf_frames = _after_header(len(_ONE_TRANSFORM) + STAMP.size, world_frame, base_frame)
            blocks["tf"] = (_span(Ins.EnuX, 3) + _span(Ins.EnuQx, 4) if tf_source == "ins"
                            else _span(Ins.TruthEnuX, 7))

        # Every block in one gather (one numpy call instead of six); each message takes its slice
        # of the bytes.
        self._gather = np.array([slot for slots in blocks.values() for slot in slots])
        self._at: dict[str, slice] = {}
        first = 0
        for name, slots in blocks.items():
            self._at[name] = slice(first * 8, (first + len(slots)) * 8)
            first += len(slots)

    def encode(self, sec: int, nanosec: int, values: np.ndarray) -> InsCdr:
        """The epoch's messages; `values` are the 40 float64 of the INS payload."""
        e = self._epoch
        e[:_ZERO] = values
        cov = values[_COV].tolist()
        finite_cov = [math.isfinite(c) for c in cov]
        e[_POSE_COV: _POSE_COV + 3] = [c if ok else 0.0 for c, ok in zip(cov, finite_cov)]
        blocks = e[self._gather].tobytes()
        at = self._at
        stamp = STAMP.pack(sec, nanosec)

        lat, lon, fix_status = float(values[_LAT]), float(values[_LON]), float(values[_FIX_STATUS])
        covariance_type, fix_block = COVARIANCE_TYPE_UNKNOWN, at["fix_unknown"]
        if math.isfinite(lat) and math.isfinite(lon) and math.isfinite(fix_status) and fix_status >= 0:
            status = int(min(fix_status, STATUS_GBAS_FIX))
            if all(finite_cov):
                covariance_type, fix_block = COVARIANCE_TYPE_DIAGONAL_KNOWN, at["fix_known"]
        else:
            status = STATUS_NO_FIX  # no geographic reference: NavSatFix allows NaN positions with NO_FIX
        fix = b"".join((ENCAPSULATION, stamp, self._fix_frame, self._fix_status.pack(status, SERVICE_GPS),
                        blocks[fix_block], bytes((covariance_type,))))

        utm = None
        if np.isfinite(values[_UTM]).all():
            utm = b"".join((ENCAPSULATION, stamp, self._utm_frames, blocks[at["utm"]]))
        tf = None
        if self._has_tf:
            tf = b"".join((ENCAPSULATION, _ONE_TRANSFORM, stamp, self._tf_frames, blocks[at["tf"]]))
        return InsCdr(
            fix=fix,
            imu=b"".join((ENCAPSULATION, stamp, self._imu_frame, blocks[at["imu"]])),
            odom=b"".join((ENCAPSULATION, stamp, self._odom_frames, blocks[at["odom"]])),
            odom_utm=utm,
            ground_truth=b"".join((ENCAPSULATION, stamp, self._odom_frames, blocks[at["truth"]])),
            tf=tf)
