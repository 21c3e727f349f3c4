"""The one clock of every output: SOURCE_DATE_EPOCH when set, else now (UTC)."""

from __future__ import annotations

import os
from datetime import datetime, timezone


def generated_at() -> str:
    """The time stamp a run writes in every file, ISO 8601 to the second, UTC.

    SOURCE_DATE_EPOCH (reproducible builds' convention) fixes it, so gold
    tests and comparisons are byte for byte; an unreadable value falls back
    to now rather than failing the run.
    """
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    try:
        moment = datetime.fromtimestamp(int(epoch), tz=timezone.utc) if epoch else datetime.now(timezone.utc)
    except (ValueError, OverflowError, OSError):
        moment = datetime.now(timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")
