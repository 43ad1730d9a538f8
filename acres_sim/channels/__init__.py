"""The game's JSON channels, each described once: its messages, fields, codes and checks.

Both ends import the same module (the fake game's servers, the package's clients), so a field or a
code exists in one place and a client cannot know fewer codes than its server sends.
"""
