"""Run a scenario from a launch file (the same as `ros2 run acres_sim scenario FILE ...`), for users
who include it in their own launch beside their stack; the launch ends when the run ends.

    ros2 launch acres_sim scenario.launch.py file:=scenarios/bale_ahead.yaml junit:=results.xml
    ros2 launch acres_sim scenario.launch.py file:=my.yaml stack:="ros2 launch my_pkg stack.launch.py" \
        set:="conditions.dust=0.5;objects.bale1.pose.x=6"

The command line itself is acres_sim.scenario.command.command_line, which the tests run without
launch installed.
"""

from launch import LaunchDescription
from launch.actions import (
    DeclareLaunchArgument,
    EmitEvent,
    ExecuteProcess,
    OpaqueFunction,
    RegisterEventHandler,
)
from launch.event_handlers import OnProcessExit
from launch.events import Shutdown
from launch.substitutions import LaunchConfiguration

from acres_sim.scenario.command import command_line

ARGUMENTS = (
    ("file", "", "The scenario file (YAML)."),
    ("stack", "", "A command line the run starts in its ROS domain once the session is up (empty: none)."),
    ("set", "", "Overrides for this run, KEY=VALUE separated by ';' (dotted keys)."),
    ("out", "", "The run's directory (empty: a new temporary one)."),
    ("report", "", "The JSON report (empty: OUT/report.json)."),
    ("junit", "", "A JUnit XML with a test case per criterion (empty: none)."),
    ("log", "", "The episode log (empty: OUT/episode.mcap)."),
    ("until_decided", "false", "true: end as soon as every criterion is decided."),
)


def _run(context):
    value = {name: LaunchConfiguration(name).perform(context) for name, _, _ in ARGUMENTS}
    runner = ExecuteProcess(cmd=command_line(**value), output="screen", name="scenario")
    ended = OnProcessExit(target_action=runner, on_exit=[EmitEvent(event=Shutdown(reason="scenario ended"))])
    return [runner, RegisterEventHandler(ended)]


def generate_launch_description():
    return LaunchDescription(
        [DeclareLaunchArgument(name, default_value=default, description=text)
         for name, default, text in ARGUMENTS]
        + [OpaqueFunction(function=_run)])
