#!/usr/bin/env bash
# make demo: fake_game and sim_bridge together. With a ROS 2 installation that has `ros2 launch`,
# the launch file does it (and rviz2 with DEMO_RVIZ=true); otherwise both executables run side by
# side and the bridge's summary line shows the data flowing. DEMO_SECONDS=N stops after N seconds.
set -euo pipefail

PORT="${DEMO_PORT:-5601}"
VEHICLE="${DEMO_VEHICLE:-polaris}"
SECONDS_LIMIT="${DEMO_SECONDS:-0}"

if command -v ros2 >/dev/null 2>&1 && ros2 pkg prefix launch_ros >/dev/null 2>&1; then
  cmd=(ros2 launch acres_sim bridge.launch.py fake_game:=true "agents:=$VEHICLE" "ports:=$PORT"
       "rviz:=${DEMO_RVIZ:-false}")
  if [ "$SECONDS_LIMIT" != "0" ]; then exec timeout --signal=INT "$SECONDS_LIMIT" "${cmd[@]}"; fi
  exec "${cmd[@]}"
fi

prefix="$(python3 -c 'from ament_index_python.packages import get_package_prefix as p; print(p("acres_sim"))')"
bin="$prefix/lib/acres_sim"
echo "demo: fake_game ($VEHICLE on 127.0.0.1:$PORT) and sim_bridge; Ctrl-C stops both"
"$bin/fake_game" --ros-args -p "ports:=[$PORT]" -p "vehicles:=[$VEHICLE]" &
game=$!
"$bin/sim_bridge" --ros-args -r "__ns:=/$VEHICLE" -p "port:=$PORT" -p stats_period_s:=2.0 &
bridge=$!
stop() { kill -INT "$bridge" "$game" 2>/dev/null || true; wait "$bridge" "$game" 2>/dev/null || true; }
trap stop INT TERM EXIT
if [ "$SECONDS_LIMIT" != "0" ]; then
  sleep "$SECONDS_LIMIT"
else
  wait -n "$bridge" "$game"
fi
