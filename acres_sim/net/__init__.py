"""What every socket of the package shares (ROS-free, a leaf): the loopback rule, connecting,
backoff and the reconnect loop of the clients, bounded line reading, rate-limited fault logging."""
