"""The fleet and catalog a worker checks every object against, built once per process."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from worker.catalog.catalog import Catalog
from worker.compat.policy import Policy
from worker.fleet.digests import consumer_digest
from worker.model.consumer import Consumer
from worker.model.digest import digest


@dataclass(frozen=True)
class Checker:
    """Everything a check needs besides the object: built once per worker process."""

    consumers: tuple[Consumer, ...]
    policy: Policy
    catalog: Catalog
    fleet_source: str = ""

    @property
    def fleet_digest(self) -> str:
        """Changes whenever a verdict could: a consumer (its release, loader and registry
        contents, so a manifest re-dumped at the same path counts) or the fleet policy."""
        return digest(
            {
                "consumers": [(c.name, consumer_digest(c)) for c in self.consumers],
                "policy": asdict(self.policy),
            }
        )
