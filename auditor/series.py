"""A series of audits: what one run brings to a carnet from earlier runs
(the baseline's findings, the reviews recorded on them)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class SeriesContext:
    baseline: tuple[dict, ...] | None = None   # the baseline run's findings of this carnet; None: no baseline
    reviews: tuple[dict, ...] = ()             # the review entries recorded for this carnet, in file order

    def digest(self) -> str:
        """What the cache key holds of it: a change of baseline or reviews is a miss."""
        text = json.dumps(asdict(self), sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()
