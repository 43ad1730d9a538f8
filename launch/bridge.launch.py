"""Start one sim_bridge per agent (namespace /<agent>), optionally fake_game, sim_control and rviz2.

    ros2 launch acres_sim bridge.launch.py
    ros2 launch acres_sim bridge.launch.py agents:=polaris,maxxum ports:=5601,5602 fake_game:=true rviz:=true
    ros2 launch acres_sim bridge.launch.py agents:=polaris,maxxum ports:=5601,5602 fake_game:=true \
        lockstep:=true control_port:=5700
    ros2 launch acres_sim bridge.launch.py agents:=polaris,maxxum ports:=5601,5602 fake_game:=true \
        lockstep:=true control_port:=5700 vehicle_ports:=5611,5612

The comma lists are split at launch time (OpaqueFunction); the planning itself is
acres_sim.nodes.launch_plan.plan_launch, plain Python that the tests run without launch installed.
"""

import tempfile
from pathlib import Path

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.logging import get_logger
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

from acres_sim.nodes.launch_plan import DEFAULT_PORTS, DescriptionPlan, config_file, plan_launch, rviz_config

ARGUMENTS = (
    ("agents", "polaris", "Agent names, comma separated: one sim_bridge per agent in namespace /<agent>."),
    ("ports", DEFAULT_PORTS, "Sensor stream ports, comma separated, one per agent (same order)."),
    ("host", "127.0.0.1", "Address of the sensor streams (loopback only)."),
    ("fake_game", "false", "true: also start fake_game serving these agents on these ports."),
    ("vehicles", "", "The vehicles (polaris | maxxum), one per agent, for fake_game and the descriptions; "
     "default: the agent names."),
    ("rviz", "false", "true: start rviz2 with config/acres_sim.rviz (a RobotModel for every agent)."),
    ("use_sim_time", "true", "use_sim_time for rviz2 (the bridges themselves run on wall time)."),
    ("params_file", config_file("bridge.yaml"), "sim_bridge parameters file."),
    ("fake_game_params_file", config_file("fake_game.yaml"), "fake_game parameters file."),
    ("sim_control_params_file", config_file("sim_control.yaml"), "sim_control parameters file."),
    ("log_level", "info", "Log level of the started nodes: debug, info, warn, error, fatal."),
    ("control_port", "0", "Control channel port: > 0 starts sim_control (and fake_game opens the channel)."),
    ("lockstep", "false", "true: fake_game starts held; the world moves on step requests (control_port)."),
    ("vehicle_ports", "", "Vehicle Bridge ports, comma separated, one per agent: a vehicle_bridge each."),
    ("vehicle_bridge_params_file", config_file("vehicle_bridge.yaml"), "vehicle_bridge parameters file."),
    ("episode_log", "", "Record the episode log (MCAP) into this new file (needs control_port; in lockstep "
     "from the first physics step)."),
    ("episode_replay", "", "Replay this episode log: the agents follow their logged states "
     "(needs control_port)."),
)


def _nodes(context):
    value = {name: LaunchConfiguration(name).perform(context) for name, _, _ in ARGUMENTS}
    plan = plan_launch(agents=value["agents"], ports=value["ports"], host=value["host"],
                       fake_game=value["fake_game"], rviz=value["rviz"], use_sim_time=value["use_sim_time"],
                       log_level=value["log_level"], vehicles=value["vehicles"],
                       control_port=value["control_port"], lockstep=value["lockstep"],
                       vehicle_ports=value["vehicle_ports"], episode_log=value["episode_log"],
                       episode_replay=value["episode_replay"],
                       robot_state_publisher=_installed("robot_state_publisher"))
    log_args = ["--ros-args", "--log-level", plan.log_level]
    actions = []
    if plan.fake_game is not None:
        actions.append(Node(package="acres_sim", executable="fake_game", name="fake_game", output="screen",
                            parameters=[value["fake_game_params_file"], plan.fake_game.parameters()],
                            arguments=log_args))
    for bridge in plan.bridges:
        actions.append(Node(package="acres_sim", executable="sim_bridge", name="sim_bridge",
                            namespace=bridge.namespace, output="screen",
                            parameters=[value["params_file"], bridge.parameters(plan.host)],
                            arguments=log_args))
    for vehicle in plan.vehicle_bridges:
        actions.append(Node(package="acres_sim", executable="vehicle_bridge", name="vehicle_bridge",
                            namespace=vehicle.namespace, output="screen",
                            parameters=[value["vehicle_bridge_params_file"], vehicle.parameters()],
                            arguments=log_args))
    for description in plan.descriptions:
        actions.append(Node(package="acres_sim", executable="vehicle_description", name="vehicle_description",
                            namespace=description.namespace, output="screen",
                            parameters=[description.parameters(), {"use_sim_time": plan.use_sim_time}],
                            arguments=log_args))
        if description.robot_state_publisher:
            actions.append(Node(package="robot_state_publisher", executable="robot_state_publisher",
                                name="robot_state_publisher", namespace=description.namespace,
                                output="screen",
                                parameters=[description.robot_state_publisher_parameters(plan.use_sim_time)],
                                remappings=list(DescriptionPlan.ROBOT_STATE_PUBLISHER_REMAPS),
                                arguments=log_args))
    without = [d.agent for d in plan.descriptions if not d.robot_state_publisher]
    if without:
        why = ("robot_state_publisher is not installed (apt install ros-$ROS_DISTRO-robot-state-publisher)"
               if not _installed("robot_state_publisher")
               else "their vehicles are not known at launch time (launch argument vehicles)")
        get_logger("acres_sim").warning(
            f"no robot_state_publisher for {', '.join(without)}: {why}. robot_description and joint_states "
            "are published; without the wheels' transforms rviz2 draws the bodies only")
    if plan.sim_control is not None:
        actions.append(Node(package="acres_sim", executable="sim_control", name="sim_control",
                            output="screen",
                            parameters=[value["sim_control_params_file"], plan.sim_control.parameters()],
                            arguments=log_args))
    if plan.rviz:
        # a RobotModel for every agent this launch names: the shipped config, written for them
        shown = Path(tempfile.mkdtemp(prefix="acres_sim_rviz_")) / "acres_sim.rviz"
        shown.write_text(rviz_config(Path(config_file("acres_sim.rviz")).read_text(),
                                     [b.agent for b in plan.bridges]))
        actions.append(Node(package="rviz2", executable="rviz2", name="rviz2", output="screen",
                            arguments=["-d", str(shown), *log_args],
                            parameters=[{"use_sim_time": plan.use_sim_time}]))
    return actions


def _installed(package: str) -> bool:
    from ament_index_python.packages import PackageNotFoundError, get_package_share_directory

    try:
        get_package_share_directory(package)
    except PackageNotFoundError:
        return False
    return True


def generate_launch_description():
    return LaunchDescription(
        [DeclareLaunchArgument(name, default_value=default, description=text)
         for name, default, text in ARGUMENTS]
        + [OpaqueFunction(function=_nodes)])
