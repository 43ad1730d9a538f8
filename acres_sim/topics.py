"""Every topic name of the ROS interface (the README lists them), spelled once (a leaf: no imports).

Names without a leading slash are relative to the node's namespace (the launch file puts each
agent's nodes in /<agent>); the absolute ones are shared by the whole session.
"""

# sim_bridge: the sensor data
LIDAR_POINTS = "lidar/points"
CAMERA_IMAGE = "camera/image_raw"
CAMERA_INFO = "camera/camera_info"
CAMERA_COMPRESSED = "camera/image_raw/compressed"
INS_FIX = "ins/fix"
INS_IMU = "ins/imu"
INS_ODOM = "ins/odom"
INS_ODOM_UTM = "ins/odom_utm"
GROUND_TRUTH_ODOM = "ground_truth/odom"
SIM_BARRIER = "sim/barrier"  # a lockstep step's data is acknowledged
SIM_CLOCK_OFFSET = "sim/clock_offset"  # world minus vehicle time of the Clock frames (transient local)
TF = "/tf"
TF_STATIC = "/tf_static"
CLOCK = "/clock"
DIAGNOSTICS = "/diagnostics"

# vehicle_bridge: commands in
VEHICLE_ENABLE = "vehicle/enable"
VEHICLE_DISABLE = "vehicle/disable"
STEERING_CMD = "vehicle/steering/cmd"
THROTTLE_CMD = "vehicle/throttle/cmd"
BRAKE_CMD = "vehicle/brake/cmd"
GEAR_CMD = "vehicle/gear/cmd"
ACKERMANN_CMD = "vehicle/ackermann_cmd"
CMD_VEL = "cmd_vel"
# vehicle_bridge: reports out
STEERING_REPORT = "vehicle/steering/report"
THROTTLE_REPORT = "vehicle/throttle/report"
BRAKE_REPORT = "vehicle/brake/report"
GEAR_REPORT = "vehicle/gear/report"
WHEEL_SPEEDS = "vehicle/wheel_speeds"
VEHICLE_VELOCITY = "vehicle/vehicle_velocity"
ACKERMANN_STATE = "vehicle/ackermann_state"
DBW_ENABLED = "vehicle/dbw_enabled"
VEHICLE_HELD_COMMAND = "vehicle/held_command"  # the stamp and source of what the vehicle holds
VEHICLE_BARRIER = "vehicle/barrier"  # a lockstep step's vehicle reports are acknowledged
VEHICLE_REFUSED = "vehicle/refused"  # the last input refused (topic, field, value, world time): latched
HELD_AWAITING = "awaiting"  # held_command's source after a reset, until the next command

# sim_control: the episode (acres_interfaces), session-wide
SIM_EPISODE = "/sim/episode"  # transient local
SIM_AGENTS = "/sim/agents"  # transient local
SIM_AGENT_STATES = "/sim/agent_states"  # every physics step
SIM_OBJECTS = "/sim/objects"  # transient local: the spawned objects
SIM_SHIFTS = "/sim/shifts"  # transient local: every agent's hardware shift
SIM_CONDITIONS = "/sim/conditions"  # transient local
SIM_FARM_EVENTS = "/sim/farm_events"  # every physics step
SIM_FARM_STAMPS = "/sim/farm_stamps"  # every physics step
SIM_CONTACTS = "/sim/contacts"  # the steps with a contact
SIM_TASK = "/sim/task"  # a test's or a learner's view of each agent's task
SIM_MARKERS = "/sim/markers"  # transient local: the objects and the recent contacts (MarkerArray)
ROBOT_DESCRIPTION = "robot_description"  # per agent, transient local: its URDF
JOINT_STATES = "joint_states"  # per agent: the steering and the wheels
