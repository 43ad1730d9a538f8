"""The episode log, ROS-free: the acres_interfaces layouts (definitions.py, generated from the .msg
files), their CDR codec, and the MCAP file the game writes and replays."""
