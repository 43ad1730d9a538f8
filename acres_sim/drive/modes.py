"""Who drives a vehicle (ROS-free): one named state (Mode) that changes only in `transition`, the
table of every event (the vehicle_bridge's driver applies it; its module docstring says what each
source is)."""

from __future__ import annotations

import enum
from dataclasses import dataclass


class Mode(enum.Enum):
    """Who drives the vehicle."""

    ROUTE = "route"  # nothing under command: the vehicle drives its route
    DBW = "dbw"  # drive-by-wire, from vehicle/enable
    ACKERMANN = "ackermann"  # the latest Ackermann command
    CMD_VEL = "cmd_vel"  # the latest Twist command
    RELEASED = "released"  # vehicle/disable: throttle off, brakes to a stop, steering held
    AWAITING = "awaiting"  # under command, a reset put it back on its route: the next command is awaited


SOURCES = (Mode.DBW, Mode.ACKERMANN, Mode.CMD_VEL)  # the modes in which a source drives
UNDER_COMMAND = (*SOURCES, Mode.AWAITING)  # sim_control waits for a command before each step


class Event(enum.Enum):
    ENABLE = "vehicle/enable"
    DISABLE = "vehicle/disable"
    DBW_COMMAND = "a drive-by-wire command"
    ACKERMANN = "an Ackermann command"
    CMD_VEL = "a Twist command"
    BACK_ON_ROUTE = "a reset put the vehicle back on its route"
    CLOCK_BACK = "a reset took the clock back"
    RESET_IN_PLACE = "a reset left the vehicle where it was"


@dataclass(frozen=True)
class DriveState:
    mode: Mode = Mode.ROUTE
    # The commands held are older than a reset that left the source driving: the next is awaited.
    stale: bool = False


def transition(state: DriveState, event: Event) -> DriveState:
    """The one place where who drives changes. Inputs that are not used (a drive-by-wire command
    while it is disabled, Ackermann while it is enabled) are refused before they get here."""
    mode = state.mode
    if event is Event.ENABLE:
        return state if mode is Mode.DBW else DriveState(Mode.DBW)
    if event is Event.DISABLE:
        if mode in SOURCES:
            return DriveState(Mode.RELEASED)
        return DriveState(Mode.ROUTE) if mode is Mode.AWAITING else state
    if event is Event.DBW_COMMAND:
        return DriveState(Mode.DBW)
    if event is Event.ACKERMANN:
        return DriveState(Mode.ACKERMANN)
    if event is Event.CMD_VEL:
        return DriveState(Mode.CMD_VEL)
    if event is Event.BACK_ON_ROUTE:
        return DriveState(Mode.AWAITING if mode in UNDER_COMMAND else Mode.ROUTE)
    # CLOCK_BACK, RESET_IN_PLACE: the source drives on, with what it held before the reset
    return DriveState(mode, stale=mode in SOURCES)
