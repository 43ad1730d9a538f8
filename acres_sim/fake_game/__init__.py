"""fake_game: serves the ACRES sensor stream from a synthetic, geometrically consistent world.

The world side (vehicles, world, georef, sensors, simulation) needs numpy and pyproj only; the
server side adds sockets; node.py is the only module that imports rclpy.
"""
