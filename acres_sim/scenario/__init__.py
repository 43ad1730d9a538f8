"""Scenarios: a test of an autonomy stack as a file (scenario_file.py), the criteria it is judged by
(criteria.py, judge.py), its report (report.py) and the scripted drivers of agents without a stack
(scripted.py); ROS-free. The run itself is acres_sim/nodes/scenario_run.py; the Python API is
acres_sim.scenario.api."""
