"""What the vehicles look like (ROS-free): each vehicle's URDF from its dimensions, and its joints'
positions (steering by the Ackermann geometry, wheels rolling) from its speed and road-wheel angle."""
