"""The episode log, ROS-free: the acres_interfaces layouts (definitions.json, generated from the .msg
files), their CDR codec, and the MCAP file the game writes and replays."""
