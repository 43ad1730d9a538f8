"""Every node's parameters: the shared scheme and checks (checks.py), and one table per node in a
file of its own."""

from acres_sim.nodes.parameters.checks import NodeParameters, ParameterError, ParamSpec
from acres_sim.nodes.parameters.fake_game import FAKE_GAME, FakeGameConfig, fake_game_config
from acres_sim.nodes.parameters.sim_bridge import BRIDGE, BridgeConfig, bridge_config
from acres_sim.nodes.parameters.sim_control import (
    SERVICE_CHUNK_STEPS,
    SIM_CONTROL,
    SimControlConfig,
    sim_control_config,
)
from acres_sim.nodes.parameters.vehicle_bridge import (
    VEHICLE_BRIDGE,
    VehicleBridgeConfig,
    vehicle_bridge_config,
)

from acres_sim.nodes.parameters.vehicle_description import (
    VEHICLE_DESCRIPTION,
    VehicleDescriptionConfig,
    vehicle_description_config,
)

NODES = (BRIDGE, SIM_CONTROL, FAKE_GAME, VEHICLE_BRIDGE, VEHICLE_DESCRIPTION)

__all__ = ["BRIDGE", "FAKE_GAME", "NODES", "SERVICE_CHUNK_STEPS", "SIM_CONTROL", "VEHICLE_BRIDGE",
           "VEHICLE_DESCRIPTION", "BridgeConfig", "FakeGameConfig", "NodeParameters", "ParamSpec",
           "ParameterError", "SimControlConfig", "VehicleBridgeConfig", "VehicleDescriptionConfig",
           "bridge_config", "fake_game_config", "sim_control_config", "vehicle_bridge_config",
           "vehicle_description_config"]
