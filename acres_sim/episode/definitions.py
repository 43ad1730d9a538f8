"""The episode log's message definitions, as generated into definitions.json by
tools/episode_definitions.py from the installed .msg files (data, not code: do not edit it):

DISTROS: the ROS 2 distributions it was made from; TEXTS: the .msg text of every type of the episode
log, as they install it; DISTRO_TEXTS: per distribution, the texts that differ (in comments only);
HASHES: the RIHS01 type hashes."""

from __future__ import annotations

import json
from importlib import resources

_DATA = json.loads(resources.files(__package__).joinpath("definitions.json").read_text(encoding="utf-8"))
DISTROS: tuple[str, ...] = tuple(_DATA["distros"])
TEXTS: dict[str, str] = _DATA["texts"]
DISTRO_TEXTS: dict[str, dict[str, str]] = _DATA["distro_texts"]
HASHES: dict[str, str] = _DATA["hashes"]
