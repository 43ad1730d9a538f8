"""`python3 -m benchmark` (make bench): the bridge measured against the socket's and the middleware's
limits, from a checkout (this package is not installed).

- processes: the child processes, their output, graph and CPU;
- measure: every measurement (latency and losses, throughput, Polaris, agents, lockstep, fake_game,
  remote subscribers); verdicts: the targets; report: the printed table; __main__: the command;
- ROS-free parts: workload (the served stream, the raw reader, /proc CPU);
- the processes they start: subscriber (one user on every topic), noop (the middleware floor),
  forwarder (the optimal reader publishing the floor's messages), learner, rawreader, replay, remote.
"""
