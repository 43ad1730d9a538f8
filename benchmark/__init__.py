"""`python3 -m benchmark`: the bridge measured against the socket's and the middleware's limits.

ROS-free parts: workload (the served stream, the raw reader, /proc CPU). rclpy parts run in their
own processes: subscriber (one user on every topic), noop (the middleware floor), forwarder (the
optimal reader publishing the floor's messages: socket + middleware). __main__ runs
every measurement side by side in one run and prints one table.
"""
