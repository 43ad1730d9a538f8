"""Examples copied from the protocol page, shared by the test suites."""

# The Hello frame of the Polaris, as the protocol page prints it.
POLARIS_HELLO_JSON = b"""{
 "schema": "acres-sensor-stream-1",
 "agent": "polaris",
 "vehicle": "polaris",
 "georeferenced": true,
 "body_origin_flu_m": [1.14808, 0, 0.65536],
 "lidar": {
  "enabled": true, "frame_id": "lidar", "hz": 10,
  "columns": 1800, "rings": 32, "range_m": 161.3,
  "azimuth_order": "cw",
  "position_flu_m": [2.5, 0, 2.039],
  "rpy_deg": [-1.518, 5.317, 0]
 },
 "camera": {
  "enabled": true, "hz": 10,
  "width": 896, "height": 512,
  "fx": 599.526, "fy": 592.378,
  "cx": 440.130, "cy": 270.805,
  "distortion_model": "plumb_bob",
  "d": [-0.55389, 0.40842, -0.0099785,
        0.0044239, -0.16673],
  "encoding": "bgr8",
  "position_flu_m": [2.745, 0.606, 1.887],
  "rpy_deg": [-3.49, 16.52, -2.63]
 },
 "ins": {
  "enabled": true, "hz": 100,
  "position_flu_m": [0, 0, 0],
  "utm_zone": 16, "datum": "nad83_2011",
  "imu_position_flu_m": [0.95, -0.45, 0.7],
  "gnss_antenna_flu_m": [1.1, 0, 2.15]
 }
}"""
