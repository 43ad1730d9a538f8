from glob import glob

from setuptools import find_packages, setup

PACKAGE = "acres_sim"

setup(
    name=PACKAGE,
    version="0.1.0",
    # the benchmark and the harness it shares with the tests are not installed
    packages=find_packages(exclude=["test", "test.*", "benchmark", "benchmark.*", "harness", "harness.*"]),
    package_data={"acres_sim.episode": ["definitions.json"]},  # the episode log's message definitions
    data_files=[
        ("share/ament_index/resource_index/packages", [f"resource/{PACKAGE}"]),
        (f"share/{PACKAGE}", ["package.xml"]),
        (f"share/{PACKAGE}/launch", glob("launch/*.launch.py")),
        (f"share/{PACKAGE}/config", glob("config/*.yaml") + glob("config/*.xml") + glob("config/*.rviz")
         + glob("config/*.json")),
        (f"share/{PACKAGE}/scenarios", glob("scenarios/*.yaml")),
    ],
    install_requires=["setuptools"],
    zip_safe=True,
    maintainer="acres_sim maintainers",
    maintainer_email="acres-sim@users.noreply.github.com",
    description="ROS 2 bridge and fake game for the ACRES simulator's TSS1 sensor stream.",
    license="Apache-2.0",
    # colcon picks pytest for `colcon test` from the "test" extra (setuptools >= 72 has no tests_require).
    extras_require={"test": ["pytest"]},
    entry_points={
        "console_scripts": [
            "sim_bridge = acres_sim.nodes.sim_bridge:main",
            "fake_game = acres_sim.nodes.fake_game:main",
            "snapshot = acres_sim.viewer.snapshot:main",
            "sim_control = acres_sim.nodes.sim_control:main",
            "vehicle_bridge = acres_sim.nodes.vehicle_bridge:main",
            "scenario = acres_sim.nodes.scenario_runner:main",
            "campaign = acres_sim.campaign.cli:main",
            "vehicle_description = acres_sim.nodes.vehicle_description:main",
        ],
    },
)
