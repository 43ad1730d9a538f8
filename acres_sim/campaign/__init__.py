"""Campaigns (ROS-free): a scenario run over a grid or random draws of its keys, each run its own
session in its own ROS domain, as Ray tasks on this machine or a cluster (`ros2 run acres_sim campaign`)."""
