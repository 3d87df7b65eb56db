"""The fleet page's routes under /ui, for the receiver's Starlette app (`ui_routes`).

Every page is HTML rendered here (Jinja2), readable with JavaScript off; a little
script only submits the filter form when a choice changes. The routes are served on
the page's own listener (`tfcompat serve`), never the event listener. Reading changes
nothing: every route is a GET but four forms, each with a CSRF token: sign-in (sets
a session cookie), sign-out (ends the session), the fleet-change preview, which only
enqueues the assessment for a worker (`pipeline.preview_tasks`) and sends the browser
to a page that shows "running" until the result is in Redis, and "compute the plan
again". The upgrade plan (`/ui/plan`, `tfcompat fleet plan`) is computed the same way,
once for every reader: a GET hands one to a worker when none is current (for this
fleet, finished less than `PLAN_FRESH` seconds ago, or still running), counted with the
previews in flight, and the page and its downloads show that one. Pages never show a
setting, so no secret reaches them. A script (the JSON and CSV downloads, or any
request not asking for HTML) without credentials gets 401 with `WWW-Authenticate:
Bearer`; a browser is sent to the sign-in form.

The matrix pages come from the index's matrix rows (`worker.sinks.matrix`), a page at
a time, in a time that does not grow with the index; a model's page reads its one
report and checks its stored metadata against each release (a few hundred checks);
a consumer's page reads at most `CONSUMER_CAP` failing rows.
"""

from __future__ import annotations

import asyncio
import csv
import io
import math
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from hashlib import sha256
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
    JSONResponse,
    RedirectResponse,
    Response,
    StreamingResponse,
)
from starlette.routing import BaseRoute, Route

from worker.catalog.catalog import Catalog
from worker.errors import TfcompatError
from worker.fleet.digests import consumer_digest
from worker.fleet.fleet import Fleet, fleet_file
from worker.model.events import ObjectEvent
from worker.notify.owners import Owners
from worker.settings import Settings
from worker.sinks.fleet_runs import FleetRuns, Progress
from worker.sinks.index import ModelIndex
from worker.sinks.matrix import CELL_STATES, STATUSES, Matrix, Page, Query, Row
from worker.sinks.previews import PreviewStore, new_preview_id
from worker.sinks.reports import report_key
from worker.ui import plan_view, reading
from worker.ui.access import (
    COOKIE,
    CSRF_COOKIE,
    PageAccess,
    Reader,
    RedisRevocations,
    Revocations,
    require_access,
)
from worker.ui.preview_form import EXAMPLES, FormProblem, change_of
from worker.ui.throttle import SignInThrottle

log = structlog.get_logger(__name__)

STATIC = Path(__file__).parent / "static"
PAGE_SIZES = (25, 50, 100, 200)
CONSUMER_CAP = 20_000  # failing rows a consumer's page groups at most
VERSIONS_SHOWN = 10
FORM_BYTES = 4096  # the largest body a form of the page sends
PREVIEW_LISTED = 200  # changed models a preview lists (worker.cli.preview_run.LISTED)
POLL_SECONDS = 2  # how often a running preview's page reloads itself
PLAN = "plan"  # the preview kind of `tfcompat fleet plan` (`worker.cli.preview_run`)
PLAN_FRESH = 600  # seconds a computed plan is shown before the next reader gets a new one
SCRIPT_PATHS = ("/ui/matrix.csv", "/ui/matrix.json", "/ui/plan.csv", "/ui/plan.json")
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'self'; script-src 'self'; "
    "img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


class TooManyPreviews(Exception):
    """As many previews as allowed are queued or running."""


class Previews:
    """Fleet-change previews: `submit` records one as queued and hands it to a worker
    (`enqueue`, the pipeline's `preview_enqueuer`), at most `in_flight` at once (they
    share the workers with model checks); `get` reads what the worker wrote."""

    def __init__(
        self,
        store: PreviewStore,
        enqueue: Callable[[str, dict[str, Any]], None],
        in_flight: int = 2,
        lasts: float = 360.0,
    ) -> None:
        self.store = store
        self._enqueue = enqueue
        self.in_flight = in_flight
        self.lasts = lasts  # seconds after which a queued or running preview was lost
        self._lock = threading.Lock()

    def submit(self, change: dict[str, Any]) -> str:
        with self._lock:  # this replica's own submissions are counted one at a time
            if self.store.in_flight(self.lasts) >= self.in_flight:
                raise TooManyPreviews
            return self._submit(change)

    def _submit(self, change: dict[str, Any]) -> str:
        preview_id = new_preview_id()
        self.store.queued(preview_id, change)
        self._enqueue(preview_id, change)
        return preview_id

    def get(self, preview_id: str) -> dict[str, Any] | None:
        return self.store.get(preview_id)

    def plan(self, fleet: str, fresh: float, again: bool = False) -> str:
        """The id of the fleet's upgrade plan every reader is shown: the newest one, when
        it was asked for the same fleet (`fleet`: its digest), is still queued or running
        (and not lost), or finished less than `fresh` seconds ago; else (or `again`) a new
        one, handed to a worker like a preview and counted with them."""
        with self._lock:
            newest = self.store.newest(PLAN)
            document = self.store.get(newest) if newest else None
            if newest and document and not again:
                age = self.store.clock() - float(document.get("since") or 0)
                running = document.get("state") in ("queued", "running")
                same = (document.get("change") or {}).get("fleet") == fleet
                if same and age < (self.lasts if running else fresh):
                    return newest
            if self.store.in_flight(self.lasts) >= self.in_flight:
                raise TooManyPreviews
            preview_id = self._submit({"kind": PLAN, "fleet": fleet})
            self.store.set_newest(PLAN, preview_id)
            return preview_id


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
    previews: Previews | None = None
    revocations: Revocations | None = None  # None: in the index's Redis


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
        revocations = sources.revocations or RedisRevocations(sources.index.redis_client)
        self.access = PageAccess(sources.settings, revocations)
        settings = sources.settings
        self.throttle = SignInThrottle(settings.ui_sign_in_per_address, settings.ui_sign_in_global)

    # --- helpers --------------------------------------------------------------------------

    def html(
        self,
        request: Request,
        template: str,
        status: int = 200,
        headers: dict[str, str] | None = None,
        **context: Any,
    ) -> HTMLResponse:
        """The page, with the CSRF token its forms carry (and the cookie that holds it,
        the first time) and who reads it (for the sign-out button)."""
        csrf, new_cookie = self.access.csrf_pair(request)
        reader = getattr(request.state, "reader", None)
        body = self.env.get_template(template).render(csrf=csrf, reader=reader, **context)
        response = HTMLResponse(
            body, status_code=status, headers={**SECURITY_HEADERS, **(headers or {})}
        )
        if new_cookie is not None:
            response.set_cookie(
                CSRF_COOKIE,
                new_cookie,
                httponly=True,
                samesite="lax",
                secure=self.access.secure(request),
                path="/ui",
            )
        return response

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
            request,
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
            "version": reading.version_line(row, versions),
            "fleet": fleet.names(),
        }

    async def model_page(self, request: Request) -> Response:
        field = f"{request.path_params['bucket']}/{request.path_params['key']}"
        found = await asyncio.to_thread(self._model, field)
        if found is None:
            return self.html(request, "missing.html", 404, what=f"s3://{field}")
        return self.html(request, "model.html", **found)

    # --- a consumer -----------------------------------------------------------------------

    async def consumer_page(self, request: Request) -> Response:
        name = request.path_params["name"]
        rows, more = await asyncio.to_thread(self.matrix.failing, name, CONSUMER_CAP)
        fleet = await asyncio.to_thread(self.s.fleet)
        consumers = fleet.names()
        if name not in consumers and not rows:
            return self.html(request, "missing.html", 404, what=f"consumer {name}")
        groups = reading.failures_by_cause(rows, name)
        return self.html(
            request,
            "consumer.html",
            name=name,
            groups=groups,
            total=len(rows),
            more=more,
            cap=CONSUMER_CAP,
            in_fleet=name in consumers,
            release=reading.consumer_release(fleet.consumers, name),
        )

    # --- a fleet change, previewed --------------------------------------------------------

    def _preview_context(self, form: dict[str, str], consumers: list[str]) -> dict[str, Any]:
        return {
            "form": form,
            "consumers": consumers,
            "listed": PREVIEW_LISTED,
            "examples": EXAMPLES,
        }

    async def preview_form(self, request: Request) -> Response:
        consumers = await asyncio.to_thread(self.consumers)
        form = {"action": "", "spec": "", "consumer": ""}
        return self.html(request, "preview.html", **self._preview_context(form, consumers))

    async def preview_start(self, request: Request) -> Response:
        """Enqueue the preview the form describes and send the browser to its page."""
        fields = await _form(request)
        if fields is None:
            return Response("form too large", status_code=413)
        consumers = await asyncio.to_thread(self.consumers)
        form = {
            "action": fields.get("action", ""),
            "spec": fields.get("spec", "").strip(),
            "consumer": fields.get("consumer", ""),
        }
        context = self._preview_context(form, consumers)
        if not self.access.csrf_ok(request, fields.get("csrf", "")):
            return self.html(request, "preview.html", 403, error=FORM_EXPIRED, **context)
        try:
            change = change_of(form, consumers)
        except FormProblem as exc:
            return self.html(request, "preview.html", 400, error=str(exc), **context)
        previews = self.s.previews
        if previews is None:
            return self.html(request, "preview.html", 503, error="no preview here", **context)
        try:
            preview_id = await asyncio.to_thread(previews.submit, change)
        except TooManyPreviews:
            error = f"{previews.in_flight} previews are running already; try again in a minute"
            return self.html(
                request, "preview.html", 429, headers={"Retry-After": "60"}, error=error, **context
            )
        except Exception as exc:  # the broker or Redis: the reader may try again
            log.warning("ui.preview_not_enqueued", error=f"{type(exc).__name__}: {exc}")
            error = "the preview could not be handed to a worker now; try again"
            return self.html(request, "preview.html", 503, error=error, **context)
        return RedirectResponse(
            f"/ui/preview/{preview_id}", status_code=303, headers=SECURITY_HEADERS
        )

    async def preview_result(self, request: Request) -> Response:
        """A preview's page: running (it reloads itself), its result, or why it failed."""
        preview_id = request.path_params["preview_id"]
        previews = self.s.previews
        document = await asyncio.to_thread(previews.get, preview_id) if previews else None
        if document is None:
            return self.html(request, "missing.html", 404, what="that preview (or it expired)")
        consumers = await asyncio.to_thread(self.consumers)
        context = self._preview_context(_form_of(document.get("change") or {}), consumers)
        state = document.get("state")
        if state == "done":
            result = document.get("result") or {}
            return self.html(
                request, "preview.html", result=result, owner_at=self.owner_at, **context
            )
        if state == "failed":
            error = f"The preview failed: {document.get('error') or 'no cause recorded'}"
            return self.html(request, "preview.html", error=error, **context)
        return self.html(
            request,
            "preview.html",
            headers={"Refresh": str(POLL_SECONDS)},
            running=True,
            **context,
        )

    # --- the fleet's upgrade plan -------------------------------------------------------

    async def _plan(self, again: bool = False) -> tuple[str, dict[str, Any] | None] | None:
        """(the plan's id, its document) the readers are shown, started when none is
        current; None when there is no preview machinery here. TooManyPreviews, or the
        broker's or Redis's error, when a new one cannot be handed to a worker now."""
        previews = self.s.previews
        if previews is None:
            return None
        digest = await asyncio.to_thread(self._fleet_digest)
        plan_id = await asyncio.to_thread(previews.plan, digest, PLAN_FRESH, again)
        return plan_id, await asyncio.to_thread(previews.get, plan_id)

    def _fleet_digest(self) -> str:
        """What a plan depends on besides the index: the consumers' definitions and the
        fleet file itself (its `upgrade_to` ranges)."""
        parts = [consumer_digest(c) for c in self.s.fleet().consumers]
        path = fleet_file(self.s.settings.fleet)
        if path.is_file():
            parts.append(sha256(path.read_bytes()).hexdigest())
        return sha256("\n".join(parts).encode()).hexdigest()

    async def _plan_or_problem(self, again: bool = False) -> tuple[dict[str, Any] | None, str, int]:
        """(the plan's document, or None and why not, and the HTTP status that says so)."""
        try:
            found = await self._plan(again)
        except TooManyPreviews:
            return None, "as many previews as allowed are running; try again in a minute", 429
        except TfcompatError:
            raise
        except Exception as exc:  # the broker: the reader may try again
            log.warning("ui.plan_not_enqueued", error=f"{type(exc).__name__}: {exc}")
            return None, "the plan could not be handed to a worker now; try again", 503
        if found is None:
            return None, "no plan here: this page has no workers to compute it", 503
        _, document = found
        if document is None:
            return None, "the plan expired before it could be read; reload", 503
        return document, "", 200

    async def plan_page(self, request: Request) -> Response:
        """The fleet's upgrade plan (`tfcompat fleet plan`): running (the page reloads
        itself), its result, or why there is none."""
        document, error, status = await self._plan_or_problem()
        if document is None:
            headers = {"Retry-After": "60"} if status == 429 else None
            return self.html(request, "plan.html", status, headers=headers, error=error)
        state = document.get("state")
        if state == "done":
            result = document.get("result") or {}
            return self.html(
                request,
                "plan.html",
                plan=plan_view.page_of(result.get("plan") or {}),
                computed=_when(document.get("since")),
                elapsed_s=result.get("elapsed_s"),
            )
        if state == "failed":
            error = f"The plan failed: {document.get('error') or 'no cause recorded'}"
            return self.html(
                request, "plan.html", error=error, computed=_when(document.get("since"))
            )
        return self.html(request, "plan.html", headers={"Refresh": str(POLL_SECONDS)}, running=True)

    async def plan_again(self, request: Request) -> Response:
        """Compute the plan anew now (the index has changed since, say)."""
        fields = await _form(request)
        if fields is None:
            return Response("form too large", status_code=413)
        if not self.access.csrf_ok(request, fields.get("csrf", "")):
            return self.html(request, "plan.html", 403, error=FORM_EXPIRED)
        document, error, status = await self._plan_or_problem(again=True)
        if document is None:
            return self.html(request, "plan.html", status, error=error)
        return RedirectResponse("/ui/plan", status_code=303, headers=SECURITY_HEADERS)

    async def _plan_download(self) -> dict[str, Any] | Response:
        """The done plan's result, or the JSON answer a script gets while there is none:
        503 with Retry-After while it runs (it was started if none was current), 500 with
        the cause when it failed."""
        document, error, status = await self._plan_or_problem()
        if document is not None and document.get("state") == "done":
            return dict(document.get("result") or {})
        if document is not None and document.get("state") == "failed":
            error, status = f"the plan failed: {document.get('error')}", 500
        elif document is not None:
            error, status = "the plan is being computed; try again in a few seconds", 503
        waits = {503: POLL_SECONDS, 429: 60}  # a failed plan (500) stays failed a while
        retry = {"Retry-After": str(waits[status])} if status in waits else {}
        return JSONResponse(
            {"error": error}, status_code=status, headers={**SECURITY_HEADERS, **retry}
        )

    async def plan_json(self, request: Request) -> Response:
        """`tfcompat fleet plan --json`, as the worker computed it."""
        found = await self._plan_download()
        if isinstance(found, Response):
            return found
        return Response(
            orjson.dumps(found.get("plan") or {}, option=orjson.OPT_INDENT_2),
            media_type="application/json",
            headers={**SECURITY_HEADERS, "Content-Disposition": "attachment; filename=plan.json"},
        )

    async def plan_csv(self, request: Request) -> Response:
        """`tfcompat fleet plan --csv`, as the worker computed it."""
        found = await self._plan_download()
        if isinstance(found, Response):
            return found
        return Response(
            str(found.get("csv") or ""),
            media_type="text/csv; charset=utf-8",
            headers={**SECURITY_HEADERS, "Content-Disposition": "attachment; filename=plan.csv"},
        )

    # --- signing in and out ---------------------------------------------------------------

    async def sign_in_form(self, request: Request) -> Response:
        wanted = _local_path(request.query_params.get("next", "/ui"))
        return self.html(request, "login.html", next=wanted)

    async def sign_in(self, request: Request) -> Response:
        address = request.client.host if request.client else ""
        wait = self.throttle.admit(address)
        if wait is not None:
            log.warning("ui.sign_in_throttled", address=address)
            return self.html(
                request,
                "login.html",
                429,
                headers={"Retry-After": str(math.ceil(wait))},
                next="/ui",
                error=f"Too many sign-in attempts; try again in {math.ceil(wait)} s.",
            )
        fields = await _form(request)
        if fields is None:
            return Response("form too large", status_code=413)
        wanted = _local_path(fields.get("next", "/ui"))
        if not self.access.csrf_ok(request, fields.get("csrf", "")):
            return self.html(request, "login.html", 403, next=wanted, error=FORM_EXPIRED)
        if not self.access.token_matches(fields.get("token", "")):
            log.warning("ui.sign_in_refused", address=address)
            error = "That token is not valid."
            return self.html(request, "login.html", 401, next=wanted, error=error)
        _, cookie = self.access.new_session()
        response = RedirectResponse(wanted, status_code=303, headers=SECURITY_HEADERS)
        response.set_cookie(
            COOKIE,
            cookie,
            max_age=self.access.ttl,
            httponly=True,
            samesite="lax",
            secure=self.access.secure(request),
            path="/ui",
        )
        return response

    async def sign_out(self, request: Request) -> Response:
        """End this browser's session: its id is recorded as ended (a copy of the cookie
        replayed later is refused) and the cookie cleared."""
        fields = await _form(request)
        if fields is None:
            return Response("form too large", status_code=413)
        if not self.access.csrf_ok(request, fields.get("csrf", "")):
            return self.html(request, "denied.html", 403, error=FORM_EXPIRED)
        reader: Reader | None = getattr(request.state, "reader", None)
        if reader is not None and reader.session_id is not None:
            await asyncio.to_thread(self.access.end_session, reader.session_id)
        response = RedirectResponse("/ui/login", status_code=303, headers=SECURITY_HEADERS)
        response.delete_cookie(
            COOKIE, path="/ui", httponly=True, samesite="lax", secure=self.access.secure(request)
        )
        return response


FORM_EXPIRED = "This form has expired or did not come from this page; reload it and try again."


async def _form(request: Request) -> dict[str, str] | None:
    """A small urlencoded form's fields (the first value of each); None when the body is
    over FORM_BYTES."""
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > FORM_BYTES:
            return None
    return {k: v[0] for k, v in parse_qs(body.decode("utf-8", "replace")).items() if v}


def _form_of(change: dict[str, Any]) -> dict[str, str]:
    """The form that describes a change (`preview_form.change_of`, read back)."""
    add, remove = change.get("add") or [], change.get("remove") or []
    if add and remove:
        return {"action": "upgrade", "consumer": str(remove[0]), "spec": str(add[0][1])}
    if remove:
        return {"action": "remove", "consumer": str(remove[0]), "spec": ""}
    return {"action": "add", "consumer": "", "spec": str(add[0][1]) if add else ""}


def _when(since: Any) -> str:
    """When a preview's state was written, in UTC."""
    if not isinstance(since, int | float):
        return "at an unknown time"
    return "at " + datetime.fromtimestamp(since, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _wants_html(request: Request) -> bool:
    """A browser's request; the downloads and anything not asking for HTML are scripts."""
    if request.url.path in SCRIPT_PATHS:
        return False
    return "text/html" in request.headers.get("accept", "")


def _local_path(path: str) -> str:
    """A path on this site to go back to after signing in (never another site's)."""
    return path if path.startswith("/ui") and "//" not in path and "\\" not in path else "/ui"


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
            try:
                who = await asyncio.to_thread(pages.access.reader, request)
            except TfcompatError as exc:  # the ended sessions' Redis
                log.warning("ui.unavailable", path=request.url.path, error=str(exc))
                return pages.html(request, "unavailable.html", 503, error=str(exc))
            if who is None:
                if not _wants_html(request):
                    return JSONResponse(
                        {"error": "authentication required: Authorization: Bearer <token>"},
                        status_code=401,
                        headers={**SECURITY_HEADERS, "WWW-Authenticate": 'Bearer realm="tfcompat"'},
                    )
                if pages.access.signs_in and request.method == "GET":
                    query = f"?{request.url.query}" if request.url.query else ""
                    there = request.url.path + query
                    return RedirectResponse(
                        "/ui/login?" + urlencode({"next": there}), status_code=303
                    )
                return pages.html(request, "denied.html", 401)
            request.state.reader = who
            try:
                return await endpoint(request)
            except TfcompatError as exc:
                log.warning("ui.unavailable", path=request.url.path, error=str(exc))
                return pages.html(request, "unavailable.html", 503, error=str(exc))
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
        Route("/ui/preview", guarded(pages.preview_form), methods=["GET"]),
        Route("/ui/preview", guarded(pages.preview_start), methods=["POST"]),
        Route("/ui/preview/{preview_id}", guarded(pages.preview_result), methods=["GET"]),
        Route("/ui/plan", guarded(pages.plan_page), methods=["GET"]),
        Route("/ui/plan", guarded(pages.plan_again), methods=["POST"]),
        Route("/ui/plan.json", guarded(pages.plan_json), methods=["GET"]),
        Route("/ui/plan.csv", guarded(pages.plan_csv), methods=["GET"]),
        Route("/ui/login", pages.sign_in_form, methods=["GET"]),
        Route("/ui/login", pages.sign_in, methods=["POST"]),
        Route("/ui/logout", guarded(pages.sign_out), methods=["POST"]),
        Route("/ui/static/{name}", static, methods=["GET"]),
    ]
