"""Frames of the sensor stream -> ROS 2 messages, as pure functions of (Hello, settings, frame).

No Node and no graph: sim_bridge calls a FrameConverter per frame and publishes what it returns, and
the tests check every field without starting ROS. The ROS interface of the README is the contract
for every field.

Hot path: what the bridge publishes on the sensor topics is serialized here directly, as CDR bytes
(cdr.py, ins_cdr.py beside this module): a cloud (0.9 MB) or an image (1.4 MB) is written around the
frame's payload in place when its PayloadBuffer was laid out as payload_layout() says for this
Hello and these settings, else copied once into the message's bytes, and no Python message is
converted field by field. pointcloud_cdr(), image_cdr(), ins_cdr() and clock_cdr() give those bytes
(the tests and the benchmark read them back as messages: harness/converted.py).
"""

from __future__ import annotations

import array

import numpy as np
from builtin_interfaces.msg import Time
from geometry_msgs.msg import TransformStamped
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import CameraInfo, CompressedImage, PointField
from std_msgs.msg import Header, UInt64
from tf2_msgs.msg import TFMessage

from acres_sim.convert import cdr
from acres_sim.convert.cdr import CloudEncoder, ImageEncoder, PointFieldSpec
from acres_sim.convert.mount_tree import BASE_FOOTPRINT, CAMERA_OPTICAL, INS, mount_transforms
from acres_sim.convert.ins_cdr import InsCdr, InsEncoder
from acres_sim.convert.settings import ConvertSettings
from acres_sim.convert.stamps import stamp_to_sec_nanosec
from acres_sim.stream.payload_buffers import PayloadBuffer, PayloadLayout
from acres_sim.stream.protocol import (
    INS_FIELDS,
    POINT_STEP,
    SUB_HEADER_SIZE,
    CameraFrame,
    FrameHeader,
    LidarFrame,
    ProtocolError,
)
from acres_sim.stream.hello import Hello
from acres_sim.stream.timing import column_firing_offsets

_UINT64_MAX = 2**64 - 1
# xyzirt: x, y, z, intensity float32, ring uint16 (+ 2 bytes padding), time float32 (velodyne-style).
XYZIRT_DTYPE = np.dtype({"names": ["xyzi", "ring", "time"], "formats": [("<f4", (4,)), "<u2", "<f4"],
                         "offsets": [0, 16, 20], "itemsize": 24})
IMAGE_ENCODING = "bgr8"
# What image_transport's compressed plugin writes for a bgr8 image encoded as JPEG.
JPEG_FORMAT = "bgr8; jpeg compressed bgr8"


# ---------------------------------------------------------------------------------------------
# Time


def stamp_to_time(stamp_s: float) -> Time:
    """Stamp in seconds -> builtin_interfaces/Time, exact to the nearest nanosecond."""
    sec, nanosec = stamp_to_sec_nanosec(stamp_s)
    return Time(sec=sec, nanosec=nanosec)


# ---------------------------------------------------------------------------------------------
# Settings and results


# ---------------------------------------------------------------------------------------------
# Helpers


def _diagonal(values: tuple[float, ...]) -> np.ndarray:
    """Row-major covariance matrix with `values` on the diagonal."""
    n = len(values)
    out = np.zeros(n * n)
    out[:: n + 1] = values
    return out


def _header(sec: int, nanosec: int, frame_id: str) -> Header:
    return Header(stamp=Time(sec=sec, nanosec=nanosec), frame_id=frame_id)


def _bytes_array(data: memoryview | bytes | bytearray) -> array.array:
    # array.array('B') is what the generated message classes store natively: assigning a numpy array
    # or a memoryview to msg.data makes the setter convert element by element (about 50 ms a cloud).
    out = array.array("B")
    out.frombytes(data)
    return out


def _point_fields(with_ring_and_time: bool = False) -> list[PointFieldSpec]:
    fields = [PointFieldSpec(name, 4 * i, PointField.FLOAT32)
              for i, name in enumerate(("x", "y", "z", "intensity"))]
    if with_ring_and_time:
        fields += [PointFieldSpec("ring", 16, PointField.UINT16),
                   PointFieldSpec("time", 20, PointField.FLOAT32)]
    return fields


# ---------------------------------------------------------------------------------------------
# The converter


def jpeg_unavailable() -> str | None:
    """None when camera/image_raw/compressed can be encoded here, else why not (one line)."""
    try:
        import simplejpeg  # noqa: F401 -- the JPEG encoder (libjpeg-turbo), an optional dependency
    except ImportError as exc:
        return (f"the JPEG encoder needs the Python package simplejpeg ({exc}); install it with "
                "`pip install simplejpeg` (rosdep key python3-simplejpeg-pip)")
    return None


def _cloud_encoder(hello: Hello, settings: ConvertSettings) -> CloudEncoder:
    lidar, xyzirt = hello.lidar, settings.lidar_fields == "xyzirt"
    return CloudEncoder(settings.frame_prefix + lidar.frame_id, lidar.columns, lidar.rings,
                        _point_fields(xyzirt), XYZIRT_DTYPE.itemsize if xyzirt else POINT_STEP)


def _image_encoder(hello: Hello, settings: ConvertSettings) -> ImageEncoder:
    cam = hello.camera
    return ImageEncoder(settings.frame_prefix + CAMERA_OPTICAL, cam.height, cam.width, IMAGE_ENCODING)


def payload_layout(hello: Hello, settings: ConvertSettings) -> PayloadLayout:
    """The margins to leave around LiDAR and camera payloads so that their messages are written
    around the sensor's bytes in place: what the encoder puts before the data less the payload's
    sub-header, which it overwrites, and what it puts after; none for a cloud with ring and time,
    whose points are laid out anew. The stream client asks this for each Hello it reads (the
    bridge hands it this function), and the converter of that Hello writes into such buffers."""
    lidar = camera = (0, 0)
    if hello.lidar.enabled and settings.lidar_fields == "xyzi":
        before, after = _cloud_encoder(hello, settings).margins
        lidar = (before - SUB_HEADER_SIZE, after)
    if hello.camera.enabled:
        before, after = _image_encoder(hello, settings).margins
        camera = (before - SUB_HEADER_SIZE, after)
    return PayloadLayout(lidar=lidar, camera=camera)


class FrameConverter:
    """Frame -> message conversion for one stream, set up once per Hello."""

    def __init__(self, hello: Hello, settings: ConvertSettings | None = None):
        self.hello = hello
        self.settings = settings = ConvertSettings() if settings is None else settings
        prefix = settings.frame_prefix
        self.lidar_frame = prefix + hello.lidar.frame_id
        self.optical_frame = prefix + CAMERA_OPTICAL
        self.ins_frame = prefix + INS
        self.base_frame = prefix + BASE_FOOTPRINT
        self.transforms = mount_transforms(hello)  # raises on a Hello with a broken frame tree

        lidar = hello.lidar
        # header stamp = end of the sweep - this (start: one sweep earlier)
        self._stamp_shift = 1.0 / lidar.hz if lidar.enabled and settings.lidar_stamp == "start" else 0.0
        self._xyzirt: np.ndarray | None = None
        if lidar.enabled and settings.lidar_fields == "xyzirt":
            # One buffer per layout: ring and time are the same in every sweep, only xyzi changes.
            self._firing = column_firing_offsets(lidar.columns, lidar.hz)
            self._xyzirt = np.zeros(lidar.columns * lidar.rings, XYZIRT_DTYPE)
            self._xyzirt["ring"] = np.tile(np.arange(lidar.rings, dtype=np.uint16), lidar.columns)
            self._fill_times(self._stamp_shift)
        if lidar.enabled:
            self._cloud = _cloud_encoder(hello, settings)

        cam = hello.camera
        if cam.enabled:
            self._image = _image_encoder(hello, settings)
        self._camera_d = tuple(float(v) for v in cam.d)
        self._camera_k = np.array([cam.fx, 0.0, cam.cx, 0.0, cam.fy, cam.cy, 0.0, 0.0, 1.0])
        self._camera_r = _diagonal((1.0, 1.0, 1.0))
        self._camera_p = np.array([cam.fx, 0.0, cam.cx, 0.0, 0.0, cam.fy, cam.cy, 0.0, 0.0, 0.0, 1.0, 0.0])

        self._ins_encoder = InsEncoder(
            ins_frame=self.ins_frame, base_frame=self.base_frame, world_frame=settings.world_frame,
            utm_frame=settings.utm_frame, tf_source=settings.tf_source,
            odom_orientation_variance=float(settings.odom_orientation_variance),
            odom_linear_velocity_variance=float(settings.odom_linear_velocity_variance),
            odom_angular_velocity_variance=float(settings.odom_angular_velocity_variance),
            imu_orientation_variance=float(settings.imu_orientation_variance),
            imu_angular_velocity_variance=float(settings.imu_angular_velocity_variance),
            imu_linear_acceleration_variance=float(settings.imu_linear_acceleration_variance))

        self.layout = payload_layout(hello, settings)

    def _own_margins(self, buffer: PayloadBuffer | None) -> bytearray | None:
        """The whole buffer when it was laid out for this converter's messages, else None (copy)."""
        if buffer is None:
            return None
        return buffer.whole if buffer.layout is self.layout or buffer.layout == self.layout else None

    def _require(self, enabled: bool, sensor: str, header: FrameHeader) -> None:
        """The one check that a frame's sensor is one the Hello enables."""
        if not enabled:
            raise ProtocolError(
                f"{sensor} frame (sequence {header.sequence}) but the Hello disables the {sensor}")

    # -- static -------------------------------------------------------------------------------

    def static_tf(self, stamp_s: float | None = None) -> TFMessage:
        """Every mount transform of the Hello as ONE TFMessage for /tf_static.

        The stamp is 0 unless given: a static transform holds for all time, tf2 buffers look it up
        regardless of its stamp, and a zero stamp stays valid for consumers on sim time whose clock
        starts later (or restarts) -- nothing ever considers it too old or in the future.
        """
        sec, nanosec = (0, 0) if stamp_s is None else stamp_to_sec_nanosec(stamp_s)
        prefix = self.settings.frame_prefix
        out = []
        for mount in self.transforms:
            t = TransformStamped(header=_header(sec, nanosec, prefix + mount.parent),
                                 child_frame_id=prefix + mount.child)
            t.transform.translation.x, t.transform.translation.y, t.transform.translation.z = \
                mount.translation
            rotation = t.transform.rotation
            rotation.x, rotation.y, rotation.z, rotation.w = mount.rotation_xyzw
            out.append(t)
        return TFMessage(transforms=out)

    # -- LiDAR --------------------------------------------------------------------------------

    def pointcloud_cdr(self, header: FrameHeader, frame: LidarFrame,
                       buffer: PayloadBuffer | None = None) -> bytes | bytearray:
        """Organised cloud: height = columns, width = rings, the point bytes unchanged (NaN kept). When
        `buffer` (the frame's) has this converter's layout, the cloud is written there, over the
        sub-header."""
        self._require(self.hello.lidar.enabled, "LiDAR", header)
        lidar = self.hello.lidar
        if (frame.columns, frame.rings) != (lidar.columns, lidar.rings):
            raise ProtocolError(f"LiDAR frame (sequence {header.sequence}) of {frame.columns} x "
                                f"{frame.rings} points, but the Hello says {lidar.columns} x {lidar.rings}")
        shift = self._stamp_shift
        stamp = header.stamp - shift
        if stamp < 0.0:  # a sweep that started before t = 0: the header cannot go below 0
            stamp, shift = 0.0, header.stamp
        sec, nanosec = stamp_to_sec_nanosec(stamp)
        # Any NaN in a point, intensity included, makes the cloud not dense. min() propagates NaN:
        # one SIMD pass over the four contiguous floats, no temporary mask.
        dense = not bool(np.isnan(frame.points.min())) if frame.points.size else True
        if self._xyzirt is None:
            return self._cloud.encode(sec, nanosec, frame.point_bytes, dense, self._own_margins(buffer))
        if shift != self._times_shift:  # only a clamped stamp changes the times
            self._fill_times(shift)
        self._xyzirt["xyzi"] = frame.points.reshape(-1, 4)  # one vectorised copy
        return self._cloud.encode(sec, nanosec, self._xyzirt.data, dense)

    def _fill_times(self, shift: float) -> None:
        """time = firing time of the cell's column minus the header stamp = offset + shift."""
        assert self._xyzirt is not None
        self._times_shift = shift
        rings = self.hello.lidar.rings
        self._xyzirt["time"] = np.repeat((self._firing + shift).astype(np.float32), rings)

    # -- camera -------------------------------------------------------------------------------

    def camera_info(self, header: FrameHeader) -> CameraInfo:
        """The calibration of the Hello with the stamp of one image (a fresh, small message)."""
        sec, nanosec = stamp_to_sec_nanosec(header.stamp)
        cam = self.hello.camera
        info = CameraInfo()
        info.header = _header(sec, nanosec, self.optical_frame)
        info.width = cam.width
        info.height = cam.height
        info.distortion_model = cam.distortion_model
        info.d = array.array("d", self._camera_d)
        # Copies: with field checks on, the generated setters keep a numpy array as is, and a
        # message must never share a template with the next one.
        info.k = self._camera_k.copy()
        info.r = self._camera_r.copy()
        info.p = self._camera_p.copy()
        return info

    def image_cdr(self, header: FrameHeader, frame: CameraFrame,
                  buffer: PayloadBuffer | None = None) -> bytes | bytearray:
        """bgr8 image with the pixel bytes unchanged (row padding kept, step = row step); in place
        like pointcloud_cdr()."""
        self._require(self.hello.camera.enabled, "camera", header)
        cam = self.hello.camera
        if (frame.width, frame.height) != (cam.width, cam.height):
            raise ProtocolError(f"camera frame (sequence {header.sequence}) of {frame.width} x "
                                f"{frame.height} pixels, but the Hello says {cam.width} x {cam.height}")
        sec, nanosec = stamp_to_sec_nanosec(header.stamp)
        return self._image.encode(sec, nanosec, frame.row_step, frame.pixel_bytes, self._own_margins(buffer))

    def compressed_image(self, header: FrameHeader, frame: CameraFrame, quality: int) -> CompressedImage:
        """The image as JPEG (sensor_msgs/CompressedImage), same stamp and frame as the raw image.

        Costs milliseconds per image: the bridge calls it off the reader and publishing threads,
        and only while the compressed topic has a subscriber."""
        import simplejpeg  # only where compressed images are asked for

        sec, nanosec = stamp_to_sec_nanosec(header.stamp)
        msg = CompressedImage()
        msg.header = _header(sec, nanosec, self.optical_frame)
        msg.format = JPEG_FORMAT
        msg.data = _bytes_array(simplejpeg.encode_jpeg(frame.pixels, quality=int(quality), colorspace="BGR"))
        return msg

    # -- INS ----------------------------------------------------------------------------------

    def ins_cdr(self, header: FrameHeader, values: np.ndarray) -> InsCdr:
        """One INS epoch -> its messages as CDR bytes (acres_sim.convert.ins_cdr), what publish() sends
        without converting a Python message field by field."""
        self._require(self.hello.ins.enabled, "INS", header)
        array_in = np.asarray(values)
        if array_in.shape != (INS_FIELDS,):
            raise ProtocolError(f"INS needs {INS_FIELDS} values, got shape {array_in.shape}")
        sec, nanosec = stamp_to_sec_nanosec(header.stamp)
        return self._ins_encoder.encode(sec, nanosec, array_in.astype(np.float64, copy=False))

    # -- clock and barrier --------------------------------------------------------------------

    def clock(self, header: FrameHeader) -> Clock:
        """/clock carries the header stamp (world time), not the vehicle time of the payload."""
        return Clock(clock=stamp_to_time(header.stamp))

    @staticmethod
    def clock_cdr(header: FrameHeader) -> bytes:
        """clock() as CDR; it needs no Hello (the bridge's reader thread calls it on the class)."""
        return cdr.clock(*stamp_to_sec_nanosec(header.stamp))

    def barrier(self, header: FrameHeader, step: int) -> UInt64:
        if isinstance(step, bool) or not isinstance(step, (int, np.integer)) or not 0 <= step <= _UINT64_MAX:
            raise ProtocolError(f"barrier step {step!r} (sequence {header.sequence}) is not a uint64")
        return UInt64(data=int(step))
