"""What the preview form may ask for: a catalog release or a consumer of the fleet.

The page takes `tf==X.Y[.Z][@loader]` (and `serving==X.Y[.Z]`, TensorFlow Serving of
that release), or the name of a consumer of the fleet file. It never takes
`NAME=MANIFEST.json`: a path typed into a web form would make the worker read a file
of its machine, and the answer would tell whether that file exists. The refusal is
decided from the text alone, before anything is read, so it is the same for every
path. `tfcompat fleet impact --consumer NAME=MANIFEST.json` previews with a manifest.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from worker.model.consumer import Loader

RELEASE = re.compile(
    r"(?:tf|serving)==\d{1,3}\.\d{1,3}(?:\.\d{1,3})?"
    r"(?:@(?:" + "|".join(re.escape(str(x)) for x in Loader) + r"))?"
)
EXAMPLES = "tf==2.16, tf==2.12@saved-model-v2, serving==2.15"


class FormProblem(ValueError):
    """The form asks for something the page does not do; the message says what it does."""


def release_or_consumer(spec: str, consumers: Sequence[str]) -> str:
    """`spec` when the page takes it; FormProblem otherwise."""
    if RELEASE.fullmatch(spec) or spec in consumers:
        return spec
    if ("=" in spec and not spec.startswith(("tf==", "serving=="))) or "/" in spec:
        raise FormProblem(
            "the page takes a release (e.g. tf==2.16) or a consumer of the fleet, not a "
            "manifest: run `tfcompat fleet impact --consumer NAME=MANIFEST.json` where the "
            "manifest is"
        )
    raise FormProblem(
        f"{spec!r} is neither a release ({EXAMPLES}; loaders: "
        f"{', '.join(str(x) for x in Loader)}) nor a consumer of the fleet"
    )


def change_of(form: dict[str, str], consumers: Sequence[str]) -> dict[str, Any]:
    """The change one form describes as the preview task's argument:
    {"add": [[name or None, spec]], "remove": [name]}; FormProblem when it cannot be."""
    action, spec, consumer = form["action"], form["spec"], form["consumer"]
    if action == "add":
        if not spec:
            raise FormProblem(f"name a release to add, e.g. {EXAMPLES}")
        if spec in consumers:
            raise FormProblem(f"{spec} is already a consumer of the fleet")
        return {"add": [[None, release_or_consumer(spec, consumers)]], "remove": []}
    if action in ("remove", "upgrade") and consumer not in consumers:
        raise FormProblem(f"choose a consumer of the fleet ({', '.join(consumers)})")
    if action == "remove":
        return {"add": [], "remove": [consumer]}
    if action == "upgrade":
        if not spec:
            raise FormProblem(f"name the release to run {consumer} on, e.g. tf==2.16")
        return {"add": [[consumer, release_or_consumer(spec, consumers)]], "remove": [consumer]}
    raise FormProblem("choose add, remove or upgrade")
