"""What every test shares. The suite is split by kind, one folder each:

- unit/: no child process, no socket, no ROS graph (their conftest refuses them); seconds in all;
- integration/: real sockets, child processes and a DDS graph on an isolated domain;
- lint/: flake8, the import layers, the config files and the README against the code.

`make test-unit` runs unit/ and lint/; `make test` (and CI) everything on Jazzy and Kilted. The
tests' own helpers are in support/; what the tests and the benchmark both run is the top-level
harness/ package.
"""
