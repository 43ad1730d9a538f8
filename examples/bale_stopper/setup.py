from glob import glob

from setuptools import find_packages, setup

setup(
    name="bale_stopper",
    version="0.1.0",
    packages=find_packages(exclude=["test"]),
    data_files=[
        ("share/ament_index/resource_index/packages", ["resource/bale_stopper"]),
        ("share/bale_stopper", ["package.xml"]),
        ("share/bale_stopper/scenarios", glob("scenarios/*.yaml")),
    ],
    install_requires=["setuptools"],
    zip_safe=True,
    maintainer="acres_sim maintainers",
    maintainer_email="acres-sim@users.noreply.github.com",
    description="A node that stops for what its LiDAR sees, tested with an acres_sim scenario.",
    license="Apache-2.0",
    extras_require={"test": ["pytest"]},
    entry_points={"console_scripts": ["stopper = bale_stopper.stopper:main"]},
)
