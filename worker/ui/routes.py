"""The fleet page's routes under /ui, for the receiver's Starlette app (`ui_routes`).

Every page is HTML rendered here (Jinja2), readable with JavaScript off; a little
script only submits the filter form when a choice changes. Reading changes nothing:
every route is a GET but the sign-in form, which sets a cookie and nothing else, and
the fleet-change preview runs `tfcompat fleet impact`'s assessment and applies
nothing. Pages never show a setting, so no secret reaches them.

The matrix pages come from the index's matrix rows (`worker.sinks.matrix`), a page at
a time, in a time that does not grow with the index; a model's page reads its one
report and checks its stored metadata against each release (a few hundred checks);
a consumer's page reads at most `CONSUMER_CAP` failing rows.
"""

from __future__ import annotations

import asyncio
import csv
import io
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import parse_qs, urlencode

import orjson
import structlog
from jinja2 import Environment, PackageLoader, select_autoescape
from starlette.requests import Request
from starlette.responses import (
    FileResponse,
    HTMLResponse,
    RedirectResponse,
    Response,
    StreamingResponse,
)
from starlette.routing import BaseRoute, Route

from worker.catalog.catalog import Catalog
from worker.errors import TfcompatError
from worker.fleet.fleet import Fleet
from worker.fleet.impact import Impact
from worker.model.events import ObjectEvent
from worker.notify.owners import Owners
from worker.settings import Settings
from worker.sinks.fleet_runs import FleetRuns, Progress
from worker.sinks.index import ModelIndex
from worker.sinks.matrix import CELL_STATES, STATUSES, Matrix, Page, Query, Row
from worker.sinks.reports import report_key
from worker.ui import reading
from worker.ui.access import COOKIE, reader, require_access, session_value, token_matches

log = structlog.get_logger(__name__)

STATIC = Path(__file__).parent / "static"
PAGE_SIZES = (25, 50, 100, 200)
CONSUMER_CAP = 20_000  # failing rows a consumer's page groups at most
VERSIONS_SHOWN = 10
LOGIN_BYTES = 4096  # the sign-in form's largest body
PREVIEW_LISTED = 200  # changed models a preview lists on the page (the JSON has all)
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'self'; script-src 'self'; "
    "img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


class Previewer(Protocol):
    """A fleet change's impact, as `tfcompat fleet impact` assesses it: consumers added
    (name or None to keep the spec's own, spec) and removed by name."""

    def __call__(self, add: Sequence[tuple[str | None, str]], remove: Sequence[str]) -> Impact: ...


class VersionLister(Protocol):
    def versions(self, bucket: str, key: str, limit: int) -> list[tuple[str, bool, str]]: ...

    def get_json(self, bucket: str, key: str) -> dict[str, Any] | None: ...


@dataclass
class Sources:
    """What the pages read; built by the process that serves them (`tfcompat serve`)."""

    settings: Settings
    index: ModelIndex
    store: VersionLister
    catalog: Catalog
    fleet: Callable[[], Fleet]
    owners: Owners | None = None
    preview: Previewer | None = None


def _templates() -> Environment:
    env = Environment(
        loader=PackageLoader("worker.ui", "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.globals.update(
        cell_look=reading.CELL_LOOK,
        cells_html=reading.cells_html,
        status_look=reading.STATUS_LOOK,
        cell_states=CELL_STATES,
        statuses=STATUSES,
        page_sizes=PAGE_SIZES,
    )
    return env


def _query_from(request: Request) -> Query:
    p = request.query_params
    limit = int(p["limit"]) if p.get("limit", "").isdigit() else 50
    sort = p.get("sort", "key")
    prefix = p.get("prefix", "").strip().removeprefix("s3://")
    return Query(
        status=p.get("status") if p.get("status") in STATUSES else None,
        consumer=p.get("consumer") or None,
        cell=p.get("cell") if p.get("cell") in CELL_STATES else None,
        prefix=prefix,
        search=p.get("q", "").strip(),
        owner=p.get("owner") or None,
        sort=sort if sort in ("key", "-key", "status") else "key",
        after=p.get("after") or None,
        limit=min(max(limit, 1), PAGE_SIZES[-1]),
    )


def _filters(query: Query) -> dict[str, str]:
    """The query's filters and order as URL parameters (no cursor)."""
    values = {
        "status": query.status or "",
        "consumer": query.consumer or "",
        "cell": query.cell or "",
        "prefix": query.prefix,
        "q": query.search,
        "owner": query.owner or "",
        "sort": query.sort if query.sort != "key" else "",
        "limit": str(query.limit) if query.limit != 50 else "",
    }
    return {k: v for k, v in values.items() if v}


class Pages:
    def __init__(self, sources: Sources) -> None:
        self.s = sources
        self.env = _templates()
        self.matrix = Matrix(sources.index.redis_client)
        self._preview_lock = threading.Lock()

    # --- helpers --------------------------------------------------------------------------

    def html(self, template: str, status: int = 200, **context: Any) -> HTMLResponse:
        body = self.env.get_template(template).render(**context)
        return HTMLResponse(body, status_code=status, headers=SECURITY_HEADERS)

    def owner_of(self, row: Row) -> str:
        return self.owner_at(row.bucket, row.key)

    def owner_at(self, bucket: str, key: str) -> str:
        """The owner owners.yaml routes the object to by its location (routes that test
        tags or metadata need the object, which the page does not read)."""
        if self.s.owners is None:
            return ""
        return self.s.owners.route(bucket, key).owner.name

    def consumers(self) -> list[str]:
        return self.s.fleet().names()

    # --- the matrix -----------------------------------------------------------------------

    def _page(self, query: Query) -> Page:
        owner_of = self.owner_of if query.owner else None
        return self.matrix.page(query, owner_of)

    async def matrix_page(self, request: Request) -> Response:
        query = _query_from(request)
        started = time.perf_counter()
        page, consumers, count, change = await asyncio.to_thread(
            lambda: (self._page(query), self.consumers(), self.matrix.count(), self._change())
        )
        filters = _filters(query)
        return self.html(
            "matrix.html",
            query=query,
            page=page,
            rows=[(row, self.owner_of(row)) for row in page.rows],
            consumers=consumers,
            owners=sorted(self.s.owners.owners) if self.s.owners else [],
            indexed=count,
            change=change,
            filters=filters,
            next_url="/ui?" + urlencode({**filters, "after": page.next}) if page.next else None,
            first_url="/ui?" + urlencode(filters) if query.after else None,
            download=urlencode(filters),
            elapsed_ms=(time.perf_counter() - started) * 1000,
        )

    def _change(self) -> Progress | None:
        """The running (or last) fleet change's counts, for one line on the page; a read
        only (`sinks.fleet_runs`)."""
        progress = FleetRuns(self.s.index.redis_client).progress()
        return progress if progress.digest is not None else None

    def _export_rows(self, query: Query) -> Iterator[tuple[Row, str]]:
        owner_of = self.owner_of if query.owner else None
        for row in self.matrix.walk(replace(query, after=None), owner_of):
            yield row, self.owner_of(row)

    async def matrix_csv(self, request: Request) -> Response:
        query = _query_from(request)
        consumers = await asyncio.to_thread(self.consumers)

        def lines() -> Iterator[str]:
            out = io.StringIO()
            writer = csv.writer(out)
            writer.writerow(["location", "version_id", "owner", "status", *consumers])
            for row, owner in self._export_rows(query):
                cells = [row.cells[c].state if c in row.cells else "" for c in consumers]
                loc = f"s3://{row.field}"
                writer.writerow([loc, row.version_id or "", owner, row.status, *cells])
                if out.tell() > 1 << 16:
                    yield out.getvalue()
                    out.seek(0)
                    out.truncate()
            yield out.getvalue()

        return StreamingResponse(
            _threaded(lines()),
            media_type="text/csv; charset=utf-8",
            headers={**SECURITY_HEADERS, "Content-Disposition": "attachment; filename=matrix.csv"},
        )

    async def matrix_json(self, request: Request) -> Response:
        query = _query_from(request)
        consumers = await asyncio.to_thread(self.consumers)

        def chunks() -> Iterator[str]:
            yield '{"consumers": ' + orjson.dumps(consumers).decode() + ', "models": ['
            first = True
            for row, owner in self._export_rows(query):
                item = {
                    "object": f"s3://{row.field}",
                    "version_id": row.version_id,
                    "owner": owner or None,
                    "status": row.status,
                    "report": f"s3://{row.report_bucket}/{row.report_key}",
                    "cells": {
                        name: {"state": c.state, "code": c.code, "message": c.message}
                        for name, c in row.cells.items()
                        if name in consumers
                    },
                }
                yield ("" if first else ",\n") + orjson.dumps(item).decode()
                first = False
            yield "]}\n"

        return StreamingResponse(
            _threaded(chunks()),
            media_type="application/json",
            headers={
                **SECURITY_HEADERS,
                "Content-Disposition": "attachment; filename=matrix.json",
            },
        )

    # --- a model --------------------------------------------------------------------------

    def _model(self, field: str) -> dict[str, Any] | None:
        row = self.matrix.row(field)
        if row is None:
            return None
        report = self.s.store.get_json(row.report_bucket, row.report_key) or {}
        decoder = self.s.index.lazy_decoder()
        entry = next(iter(self.s.index.models_of([field], decoder)), None)
        fleet = self.s.fleet()
        grid = (
            reading.release_grid(entry.artifacts, self.s.catalog, fleet.policy)
            if entry is not None and entry.artifacts
            else []
        )
        versions = []
        try:
            listed = self.s.store.versions(row.bucket, row.key, VERSIONS_SHOWN)
        except TfcompatError as exc:
            log.warning("ui.versions_unlisted", object=field, error=str(exc))
            listed = []
        for version_id, latest, written in listed:
            event = ObjectEvent(row.bucket, row.key, "ObjectCreated:Put", version_id=version_id)
            key = report_key(self.s.settings.report_prefix, event)
            document = self.s.store.get_json(row.report_bucket, key) if not latest else report
            versions.append(
                {
                    "version_id": version_id,
                    "latest": latest,
                    "written": written,
                    "status": (document or {}).get("status"),
                    "releases": (document or {}).get("compatible_releases") or [],
                }
            )
        return {
            "row": row,
            "owner": self.owner_of(row),
            "report": report,
            "consumers": reading.consumer_reports(report),
            "grid": grid,
            "loaders": [str(x) for x in reading.LOADERS],
            "versions": versions,
            "fleet": fleet.names(),
        }

    async def model_page(self, request: Request) -> Response:
        field = f"{request.path_params['bucket']}/{request.path_params['key']}"
        found = await asyncio.to_thread(self._model, field)
        if found is None:
            return self.html("missing.html", 404, what=f"s3://{field}")
        return self.html("model.html", **found)

    # --- a consumer -----------------------------------------------------------------------

    async def consumer_page(self, request: Request) -> Response:
        name = request.path_params["name"]
        rows, more = await asyncio.to_thread(self.matrix.failing, name, CONSUMER_CAP)
        consumers = await asyncio.to_thread(self.consumers)
        if name not in consumers and not rows:
            return self.html("missing.html", 404, what=f"consumer {name}")
        groups = reading.failures_by_cause(rows, name)
        return self.html(
            "consumer.html",
            name=name,
            groups=groups,
            total=len(rows),
            more=more,
            cap=CONSUMER_CAP,
            in_fleet=name in consumers,
        )

    # --- a fleet change, previewed --------------------------------------------------------

    async def preview_page(self, request: Request) -> Response:
        p = request.query_params
        action = p.get("action", "")
        consumers = await asyncio.to_thread(self.consumers)
        form = {
            "action": action,
            "spec": p.get("spec", "").strip(),
            "consumer": p.get("consumer", ""),
        }
        context: dict[str, Any] = {"form": form, "consumers": consumers, "listed": PREVIEW_LISTED}
        if not action:
            return self.html("preview.html", **context)
        try:
            add, remove = _change(action, form["spec"], form["consumer"], consumers)
        except ValueError as exc:
            return self.html("preview.html", 400, error=str(exc), **context)
        if self.s.preview is None:
            return self.html("preview.html", 503, error="no preview here", **context)
        if not self._preview_lock.acquire(blocking=False):
            return self.html(
                "preview.html", 429, error="another preview is running; try again", **context
            )
        try:
            started = time.perf_counter()
            impact = await asyncio.to_thread(self.s.preview, add, remove)
        except TfcompatError as exc:
            return self.html("preview.html", 400, error=str(exc), **context)
        finally:
            self._preview_lock.release()
        return self.html(
            "preview.html",
            impact=impact,
            summary=reading.impact_summary(impact),
            # what newly fails first, then as the assessment listed them
            changed=sorted(impact.models, key=lambda m: not m.newly_broken)[:PREVIEW_LISTED],
            owner_at=self.owner_at,
            elapsed_s=time.perf_counter() - started,
            **context,
        )

    # --- signing in -----------------------------------------------------------------------

    async def login(self, request: Request) -> Response:
        wanted = _local_path(request.query_params.get("next", "/ui"))
        if request.method == "GET":
            return self.html("login.html", next=wanted)
        body = b""
        async for chunk in request.stream():  # a token and a path: a few hundred bytes
            body += chunk
            if len(body) > LOGIN_BYTES:
                return Response("form too large", status_code=413)
        form = parse_qs(body.decode("utf-8", "replace"))
        token = form.get("token", [""])[0]
        wanted = _local_path(form.get("next", ["/ui"])[0])
        session = session_value(self.s.settings)
        if session is None or not token_matches(self.s.settings, token):
            log.warning("ui.sign_in_refused")
            return self.html("login.html", 401, next=wanted, error="That token is not valid.")
        response = RedirectResponse(wanted, status_code=303, headers=SECURITY_HEADERS)
        response.set_cookie(
            COOKIE,
            session,
            httponly=True,
            samesite="strict",
            secure=request.url.scheme == "https",
            path="/ui",
        )
        return response


def _local_path(path: str) -> str:
    """A path on this site to go back to after signing in (never another site's)."""
    return path if path.startswith("/ui") and "//" not in path and "\\" not in path else "/ui"


def _change(
    action: str, spec: str, consumer: str, consumers: list[str]
) -> tuple[list[tuple[str | None, str]], list[str]]:
    """(consumers added, names removed) for one change the preview form describes."""
    if action == "add":
        if not spec:
            raise ValueError("name a consumer to add, e.g. tf==2.16 or serving==2.15")
        return [(None, spec)], []
    if action in ("remove", "upgrade") and consumer not in consumers:
        raise ValueError(f"choose a consumer of the fleet ({', '.join(consumers)})")
    if action == "remove":
        return [], [consumer]
    if action == "upgrade":
        if not spec:
            raise ValueError(f"name the release to run {consumer} on, e.g. tf==2.16")
        return [(consumer, spec)], [consumer]
    raise ValueError("choose add, remove or upgrade")


async def _threaded(items: Iterator[str]) -> AsyncIterator[str]:
    """An iterator that reads Redis, consumed on a thread: the event loop never waits."""
    done = object()
    while True:
        item = await asyncio.to_thread(next, items, done)
        if item is done:
            return
        yield str(item)


Endpoint = Callable[[Request], Awaitable[Response]]


def ui_routes(sources: Sources) -> list[BaseRoute]:
    """The /ui routes, each behind `access.reader`; [] when the page is off.
    ConfigError when it is on with no way to authenticate (`access.require_access`)."""
    settings = sources.settings
    if not settings.ui_enabled:
        return []
    require_access(settings)
    pages = Pages(sources)

    def guarded(endpoint: Endpoint) -> Endpoint:
        async def route(request: Request) -> Response:
            if reader(request, settings) is None:
                if session_value(settings) is not None and request.method == "GET":
                    query = f"?{request.url.query}" if request.url.query else ""
                    there = request.url.path + query
                    return RedirectResponse(
                        "/ui/login?" + urlencode({"next": there}), status_code=303
                    )
                return pages.html("denied.html", 401)
            try:
                return await endpoint(request)
            except TfcompatError as exc:
                log.warning("ui.unavailable", path=request.url.path, error=str(exc))
                return pages.html("unavailable.html", 503, error=str(exc))
            except Exception:
                log.exception("ui.failed", path=request.url.path)
                raise

        return route

    async def static(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in ("ui.css", "ui.js"):
            return Response(status_code=404)
        return FileResponse(STATIC / name, headers={"Cache-Control": "max-age=300"})

    return [
        Route("/ui", guarded(pages.matrix_page), methods=["GET"]),
        Route("/ui/matrix.csv", guarded(pages.matrix_csv), methods=["GET"]),
        Route("/ui/matrix.json", guarded(pages.matrix_json), methods=["GET"]),
        Route("/ui/model/{bucket}/{key:path}", guarded(pages.model_page), methods=["GET"]),
        Route("/ui/consumer/{name}", guarded(pages.consumer_page), methods=["GET"]),
        Route("/ui/preview", guarded(pages.preview_page), methods=["GET"]),
        Route("/ui/login", pages.login, methods=["GET", "POST"]),
        Route("/ui/static/{name}", static, methods=["GET"]),
    ]
