"""What sim_control decides without ROS: when a lockstep step may go and when it is done."""
