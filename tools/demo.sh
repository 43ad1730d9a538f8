#!/usr/bin/env bash
# make demo: fake_game and sim_bridge together with a live table, then a snapshot PNG
# (acres_sim/demo.py). DEMO_SECONDS (20; 0 = until Ctrl-C), DEMO_VEHICLE, DEMO_PORT, DEMO_SNAPSHOT.
set -euo pipefail
exec python3 -m acres_sim.viewer.demo
