"""Fleet edits from the command line: a new fleet file, or consumers added/removed."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from worker.errors import ConfigError
from worker.fleet.fleet import Fleet
from worker.model.consumer import Consumer


def edited_fleet(
    current: Fleet, new: Fleet | None, add: Sequence[Consumer], remove: Sequence[str]
) -> Fleet:
    """`new` if given, else `current`; then consumers added and removed by name."""
    base = new or current
    names = {c.name for c in base.consumers}
    unknown = [n for n in remove if n not in names]
    if unknown:
        raise ConfigError(
            f"--remove-consumer: no consumer named {', '.join(unknown)} "
            f"(known: {', '.join(sorted(names))})"
        )
    clashes = [c.name for c in add if c.name in names and c.name not in remove]
    if clashes:
        raise ConfigError(f"--add-consumer: a consumer named {', '.join(clashes)} exists")
    kept = tuple(c for c in base.consumers if c.name not in set(remove))
    return replace(base, consumers=kept + tuple(add))


class Progress:
    """A one-line progress bar on a terminal; silent elsewhere (logs carry progress)."""

    def __init__(
        self, total: int, label: str, write: Callable[[str], object], interactive: bool
    ) -> None:
        self.total, self.label, self.write, self.interactive = (
            max(total, 1),
            label,
            write,
            interactive,
        )
        self.done = 0

    def __call__(self, step: int) -> None:
        self.done += step
        if self.interactive and (self.done % 50 == 0 or self.done == self.total):
            width = 30
            filled = int(width * self.done / self.total)
            self.write(
                f"\r{self.label} [{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total}"
            )
            if self.done >= self.total:
                self.write("\n")
