"""The fake game's INS model (ROS-free): position errors as a first-order Gauss-Markov process plus
white noise, heading and roll / pitch errors as Gauss-Markov processes, white noise on velocity,
angular rate and specific force.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from acres_sim.stream.protocol import INS_FIELDS, INS_GEO_FIELDS, Ins

from acres_sim.rotations import matrix_to_quaternion, rpy_matrix

from acres_sim.fake_game.world.georef import Georeference


from acres_sim.fake_game.simulation.poses import Kinematics

GRAVITY_MPS2 = 9.81  # the protocol page's value at rest


@dataclass(frozen=True)
class InsNoise:
    """1-sigma values of the INS error model (east, north, up where there are three)."""

    position_gm_m: tuple[float, float, float] = (0.02, 0.02, 0.03)
    position_white_m: tuple[float, float, float] = (0.005, 0.005, 0.008)
    correlation_time_s: float = 60.0
    roll_pitch_deg: float = 0.03
    heading_deg: float = 0.1
    velocity_mps: float = 0.02
    gyro_radps: float = 0.001
    accel_mps2: float = 0.05

    @property
    def position_variance_m2(self) -> np.ndarray:
        return np.square(self.position_gm_m) + np.square(self.position_white_m)


def _cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a x b of two 3-vectors: np.cross costs 90 us on a 3-vector, this 3 us (100 epochs a second)."""
    ax, ay, az = float(a[0]), float(a[1]), float(a[2])
    bx, by, bz = float(b[0]), float(b[1]), float(b[2])
    return np.array([ay * bz - az * by, az * bx - ax * bz, ax * by - ay * bx])


class InsModel:
    """One INS: call epoch() with increasing times; the error state is a Gauss-Markov process."""

    def __init__(self, georef: Georeference | None, lever_arm_flu_m=(0.0, 0.0, 0.0),
                 noise: InsNoise | None = None, rng: np.random.Generator | None = None):
        self.georef = georef
        self.lever_arm = np.asarray(lever_arm_flu_m, float)
        self.noise = noise or InsNoise()
        self.rng = rng  # None: no noise at all
        self._t: float | None = None
        self._pos_err = np.zeros(3)
        self._att_err = np.zeros(3)  # roll, pitch, heading, rad
        n = self.noise  # the Gauss-Markov processes' sigmas, once (100 epochs a second)
        self._sigmas = (np.radians([n.roll_pitch_deg, n.roll_pitch_deg, n.heading_deg]),
                        np.asarray(n.position_gm_m))

    def _advance(self, t: float) -> np.ndarray:
        """Step the Gauss-Markov states to t; returns the white-noise draws of this epoch."""
        n = self.noise
        att_sigma, gm_sigma = self._sigmas
        w = self.rng.standard_normal(18)
        if self._t is None:
            self._pos_err = gm_sigma * w[0:3]  # start in the stationary distribution
            self._att_err = att_sigma * w[3:6]
        else:
            dt = t - self._t
            phi = math.exp(-dt / n.correlation_time_s)
            q = math.sqrt(max(0.0, 1.0 - phi * phi))
            self._pos_err = phi * self._pos_err + q * gm_sigma * w[0:3]
            self._att_err = phi * self._att_err + q * att_sigma * w[3:6]
        return w[6:]

    def skip(self, t: float) -> None:
        """An epoch nobody reads: the error processes advance as epoch() would advance them (the
        same draws), nothing else is computed."""
        if self._t is not None and t < self._t:
            raise ValueError(f"INS epochs must come in increasing time: {t} after {self._t}")
        if self.rng is not None:
            self._advance(t)
        self._t = t

    def shift_time(self, dt: float) -> None:
        """The world clock jumped by dt: epochs go on from the shifted time, the error state carries on."""
        if self._t is not None:
            self._t += dt

    def epoch(self, t: float, kin: Kinematics) -> np.ndarray:
        """The 40 INS values for the truth `kin` at world time t."""
        if self._t is not None and t < self._t:
            raise ValueError(f"INS epochs must come in increasing time: {t} after {self._t}")
        # the INS point may sit away from base_footprint: rigid-body lever arm
        omega = kin.angular_rate_body
        arm = self.lever_arm
        position = kin.position + kin.rotation @ arm
        velocity = kin.velocity_body + _cross(omega, arm)
        accel = kin.acceleration_body + _cross(omega, _cross(omega, arm))
        gravity_body = kin.rotation.T @ np.array([0.0, 0.0, GRAVITY_MPS2])
        specific_force = accel + gravity_body
        gyro = omega.copy()
        rotation = kin.rotation
        quaternion = kin.quaternion
        if self.rng is not None:
            white = self._advance(t)
            n = self.noise
            position = position + self._pos_err + np.asarray(n.position_white_m) * white[0:3]
            velocity = velocity + n.velocity_mps * white[3:6]
            gyro = gyro + n.gyro_radps * white[6:9]
            specific_force = specific_force + n.accel_mps2 * white[9:12]
            # attitude error: small rotations added to the true roll, pitch and heading
            er, ep, eh = self._att_err
            rotation = (rpy_matrix(0.0, 0.0, eh) @ kin.rotation) @ rpy_matrix(er, ep, 0.0)
            quaternion = matrix_to_quaternion(rotation)
        self._t = t

        v = np.full(INS_FIELDS, np.nan)
        v[Ins.VelX:Ins.VelZ + 1] = velocity
        v[Ins.GyroX:Ins.GyroZ + 1] = gyro
        v[Ins.AccelX:Ins.AccelZ + 1] = specific_force
        v[Ins.EnuQx:Ins.EnuQw + 1] = quaternion
        v[Ins.EnuX:Ins.EnuZ + 1] = position
        v[Ins.TruthEnuX:Ins.TruthEnuZ + 1] = kin.position
        v[Ins.TruthQx:Ins.TruthQw + 1] = kin.quaternion
        v[Ins.TruthSpeed] = kin.speed
        if self.georef is None:
            v[list(INS_GEO_FIELDS)] = np.nan
            v[Ins.FixStatus] = -1.0
            return v
        fix = self.georef.fix(*position)
        v[Ins.UtmE] = fix.utm_e
        v[Ins.UtmN] = fix.utm_n
        v[Ins.UtmH] = fix.height_m
        v[Ins.UtmQx:Ins.UtmQw + 1] = Georeference.enu_to_utm_quaternion(quaternion, fix.grid_rotation_deg)
        v[Ins.Lat] = fix.lat_deg
        v[Ins.Lon] = fix.lon_deg
        v[Ins.Height] = fix.height_m
        v[Ins.CovE:Ins.CovU + 1] = self.noise.position_variance_m2
        v[Ins.FixStatus] = 2.0
        v[Ins.GridRotationDeg] = fix.grid_rotation_deg
        v[Ins.UtmZone] = float(self.georef.utm_zone)
        return v
