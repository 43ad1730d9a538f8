"""acres_sim: the ACRES simulator sensor stream in ROS 2."""
