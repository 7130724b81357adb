"""The labelling web app: a thin HTTP layer (FastAPI) over the query store.

JSON API (every route needs a signed-in labeller: ``Authorization: Bearer <token>``,
or the cookie set by ``POST /api/session``):

- ``GET /api/queries/next`` → ``{"query_id", "instruction", "left", "right", "labelled", "queue"}``:
  the next query for this labeller with its two clip URLs (``query_id`` null when none waits).
  The query is leased to this labeller for a short while so others get different ones.
- ``POST /api/labels`` with ``{"query_id": int, "answer": "left"|"right"|"equal"|"incomparable"|"skip",
  "response_ms": int (optional)}`` → 201 ``{"label_id", "labelled", "queue"}``; the label is
  committed before the answer is sent. 404 unknown query (or another run's, on a server
  started for one run), 409 already answered by you or the query already has the answers
  it needs (nobody would use yours), 410 query expired (e.g. its run ended), 422 malformed
  body (``query_id`` must be a JSON integer: ``true`` is not 1), 413 body over the size limit.
- ``GET /api/me``, ``GET /api/status`` (counts and the latest episode video URL).
- ``POST /api/session`` ``{"token"}`` sets an HttpOnly cookie for the page; ``DELETE`` clears it.
- ``GET /clips/<name>.webm``: a clip or episode video (signed-in labellers only).
- Admins: ``GET /api/admin/stats``, ``GET /api/admin/export?format=csv|json`` (both over the
  labels of the served run, or of every run).

A valid token is always accepted. Wrong ones are counted per client address and in total
(:mod:`prefrl.web.throttle`): past ``max_failures`` from one address or ``max_failures_total``
from all within ``failure_window_s`` seconds, a wrong token is answered 429 (with
``Retry-After``) instead of 401. The client address is the socket peer's; proxy headers are
read only from the proxies named in ``forwarded_allow_ips`` (:mod:`prefrl.web.proxies`).

Pages: ``/`` (labelling) and ``/admin``.
"""

import json
import re
import time
from collections.abc import Iterable
from typing import Annotated, Any, Literal

from fastapi import Depends, FastAPI, HTTPException, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse
from pydantic import BaseModel, ConfigDict, Field, StrictInt
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from typing_extensions import NotRequired, TypedDict  # pydantic reads these on Python < 3.12

from prefrl.storage.episodes import latest_episode
from prefrl.storage.records import AlreadyLabelled, QueryClosed, QueryFilled, UnknownQuery, User
from prefrl.storage.runs import find_run
from prefrl.storage.stats import export_csv, label_rows, label_stats
from prefrl.storage.store import QueryStore
from prefrl.web.pages import ADMIN_HTML, LABEL_HTML
from prefrl.web.proxies import TrustedProxies
from prefrl.web.throttle import FailedSignIns

COOKIE = "prefrl_token"
CLIP_NAME = re.compile(r"^(r[0-9]{1,12}-(ep-)?)?[0-9a-f]{32}\.webm$")  # r<run>-[ep-]<hex>, or older bare hex
MAX_TOKEN = 256


class LabelIn(BaseModel):
    """Body of ``POST /api/labels``."""

    model_config = ConfigDict(extra="forbid")
    query_id: StrictInt = Field(ge=1, le=2**62)  # strict: a JSON boolean is no id
    answer: Literal["left", "right", "equal", "incomparable", "skip"]
    response_ms: StrictInt | None = Field(default=None, ge=0, le=7 * 24 * 3600 * 1000)


class SessionIn(BaseModel):
    """Body of ``POST /api/session``."""

    model_config = ConfigDict(extra="forbid")
    token: str = Field(min_length=1, max_length=MAX_TOKEN)


class SignedIn(TypedDict):
    """Body of the answer to ``POST /api/session``."""

    name: str
    is_admin: bool


class Counts(TypedDict):
    """A labeller's labels given and queries waiting, part of most answers."""

    labelled: int
    queue: int


class Me(SignedIn, Counts):
    """``GET /api/me``."""


class Status(Counts):
    """``GET /api/status``: the counts and the newest episode's video (``None``: none yet)."""

    episode: str | None


class NextQuery(Counts):
    """``GET /api/queries/next``: a query with its two clips' URLs; ``query_id`` ``None`` (and
    nothing else but the counts) when there is none."""

    query_id: int | None
    instruction: NotRequired[str]
    left: NotRequired[str]
    right: NotRequired[str]


class LabelOut(Counts):
    """``POST /api/labels``: the label recorded."""

    label_id: int
    query_id: int


class BodyLimit:
    """ASGI middleware: 413 for bodies over ``max_bytes``, by Content-Length or as they stream.

    The body is read here first (it is small: at most ``max_bytes``) and replayed to the app,
    so a chunked upload that grows too large is answered 413 before any route sees it.
    """

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for k, v in scope["headers"]:
            if k == b"content-length" and (not v.isdigit() or int(v) > self.max_bytes):
                await _too_large(send, self.max_bytes)
                return
        chunks: list[bytes] = []
        seen, more = 0, True
        while more:
            msg = await receive()
            if msg["type"] != "http.request":  # the client went away
                return
            chunk = msg.get("body", b"")
            seen += len(chunk)
            if seen > self.max_bytes:
                await _too_large(send, self.max_bytes)
                return
            chunks.append(chunk)
            more = bool(msg.get("more_body", False))
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": b"".join(chunks), "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


async def _too_large(send: Send, limit: int) -> None:
    body = json.dumps({"detail": f"request body over {limit} bytes"}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": 413, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class RunScope:
    """The run a server serves: by its id or title (the newest run of that title), looked up
    again every few seconds until found, so a server may start before its run; ``None``: all."""

    def __init__(self, store: QueryStore, run: str | None, recheck_s: float = 2.0) -> None:
        self.store, self.run, self.recheck_s = store, run, recheck_s
        self._id: int | None = None
        self._checked = -float("inf")

    def run_id(self) -> int | None:
        """Store id of the served run (``-1``: none of that name yet; ``None``: every run)."""
        if self.run is None:
            return None
        now = time.monotonic()
        if now - self._checked >= self.recheck_s:
            self._id, self._checked = find_run(self.store, self.run), now
        return -1 if self._id is None else self._id


def create_app(
    store: QueryStore,
    run: str | None = None,
    max_body: int = 16_384,
    lease_s: float = 30.0,
    max_failures: int = 10,
    failure_window_s: float = 60.0,
    max_failures_total: int = 100,
    forwarded_allow_ips: str | Iterable[str] | None = None,
    proxy_header: str = "x-forwarded-for",
) -> FastAPI:
    """The labelling app over ``store``; ``run`` (a run's id or title) limits it to that run's
    queries, clips, stats and export (default: every run).

    ``forwarded_allow_ips`` (addresses or networks, e.g. ``"10.0.0.1,127.0.0.1"``) names the
    reverse proxies whose ``proxy_header`` (``x-forwarded-for`` or ``forwarded``) gives the
    client's address; by default none: the socket peer is the client. Serve the app with
    the ASGI server's own proxy-header handling off (uvicorn: ``proxy_headers=False``), as
    ``prefrl label`` does, or the peer it reports may already come from a header."""
    app = FastAPI(
        title="prefrl labelling", docs_url="/api/docs", redoc_url=None, openapi_url="/api/openapi.json"
    )
    scope = RunScope(store, run)
    failures = FailedSignIns(max_failures, failure_window_s, max_failures_total)
    proxies = TrustedProxies.parse(forwarded_allow_ips, proxy_header)

    def check_token(request: Request, token: str) -> User:
        """The token's labeller. A wrong (unknown or expired) token is counted against its
        client: 401, or 429 while that client or the whole server is over its limit."""
        user = store.user_for_token(token) if len(token) <= MAX_TOKEN else None
        if user is not None:
            return user
        client = proxies.client(request.client.host if request.client else "", request.headers.items())
        wait = failures.retry_after(client)
        failures.failed(client)
        if wait > 0:
            who = "on this server" if failures.server_wide() else "from your address"
            raise HTTPException(
                429,
                f"too many failed sign-ins {who}: try again later",
                {"Retry-After": str(max(1, round(wait)))},
            )
        raise HTTPException(401, "unknown or expired token", {"WWW-Authenticate": "Bearer"})

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        """422 naming each bad field, never echoing what was sent (NaN cannot be JSON)."""
        problems = []
        for e in exc.errors():
            where = ".".join(str(p) for p in e.get("loc", ()) if p != "body") or "body"
            problems.append(f"{where}: {e.get('msg', 'invalid')}")
        return JSONResponse({"detail": "; ".join(problems)[:500]}, status_code=422)

    def current_user(request: Request) -> User:
        token = None
        auth = request.headers.get("authorization")
        if auth:
            scheme, _, cred = auth.partition(" ")
            if scheme.lower() != "bearer" or not cred.strip():
                raise HTTPException(
                    401, "use 'Authorization: Bearer <token>'", {"WWW-Authenticate": "Bearer"}
                )
            token = cred.strip()
        else:
            token = request.cookies.get(COOKIE)
        if not token:
            raise HTTPException(401, "sign in first: no token given", {"WWW-Authenticate": "Bearer"})
        return check_token(request, token)

    def admin_user(user: Annotated[User, Depends(current_user)]) -> User:
        if not user.is_admin:
            raise HTTPException(403, f"labeller {user.name!r} is not an admin")
        return user

    Signed = Annotated[User, Depends(current_user)]
    Admin = Annotated[User, Depends(admin_user)]

    def counts(user: User) -> Counts:
        labelled, queue = store.counts(user.id, scope.run_id())
        return {"labelled": labelled, "queue": queue}

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    def label_page() -> str:
        return LABEL_HTML

    @app.get("/admin", response_class=HTMLResponse, include_in_schema=False)
    def admin_page() -> str:
        return ADMIN_HTML

    @app.post("/api/session")
    def sign_in(body: SessionIn, request: Request, response: Response) -> SignedIn:
        """Check a token and set the page's cookie."""
        user = check_token(request, body.token)
        response.set_cookie(COOKIE, body.token, httponly=True, samesite="strict", max_age=30 * 24 * 3600)
        return {"name": user.name, "is_admin": user.is_admin}

    @app.delete("/api/session")
    def sign_out(response: Response) -> dict[str, bool]:
        response.delete_cookie(COOKIE)
        return {"signed_out": True}

    @app.get("/api/me")
    def me(user: Signed) -> Me:
        return {"name": user.name, "is_admin": user.is_admin, **counts(user)}

    @app.get("/api/status")
    def status(user: Signed) -> Status:
        ep = latest_episode(store, scope.run_id())
        return {**counts(user), "episode": None if ep is None else f"/clips/{ep}"}

    @app.get("/api/queries/next")
    def next_query(user: Signed) -> NextQuery:
        """The next query for this labeller, with its two clip URLs."""
        q = store.next_query(user.id, scope.run_id(), lease_s=lease_s)
        if q is None:
            c = counts(user)
            return {"query_id": None, "labelled": c["labelled"], "queue": c["queue"]}
        return {
            "query_id": q["query_id"],
            "instruction": q["instruction"],
            "left": f"/clips/{q['left_video']}",
            "right": f"/clips/{q['right_video']}",
            **counts(user),
        }

    @app.post("/api/labels", status_code=201)
    def post_label(body: LabelIn, user: Signed) -> LabelOut:
        """Record this labeller's answer to a query (never overwrites an earlier one)."""
        try:
            label_id = store.add_label(body.query_id, user.id, body.answer, body.response_ms, scope.run_id())
        except UnknownQuery as e:
            raise HTTPException(404, str(e)) from e
        except (AlreadyLabelled, QueryFilled) as e:
            raise HTTPException(409, str(e)) from e
        except QueryClosed as e:
            raise HTTPException(410, str(e)) from e
        return {"label_id": label_id, "query_id": body.query_id, **counts(user)}

    @app.get("/clips/{name}", include_in_schema=False)
    def clip(name: str, user: Signed) -> FileResponse:
        path = store.clip_path(name, scope.run_id()) if CLIP_NAME.match(name) else None
        if path is None:
            raise HTTPException(404, "no such clip")
        return FileResponse(path, media_type="video/webm", headers={"Cache-Control": "private, max-age=3600"})

    @app.get("/api/admin/stats")
    def stats(user: Admin) -> dict[str, Any]:
        """Labels per labeller, agreement on doubly-labelled queries, labels per hour."""
        return label_stats(store, scope.run_id())

    @app.get("/api/admin/export")
    def export(user: Admin, format: Literal["csv", "json"] = "json") -> Response:
        """Every label with its query's clip provenance."""
        rows = label_rows(store, scope.run_id())
        if format == "csv":
            return Response(
                export_csv(rows),
                media_type="text/csv",
                headers={"Content-Disposition": 'attachment; filename="labels.csv"'},
            )
        return JSONResponse(rows)

    app.add_middleware(BodyLimit, max_bytes=max_body)
    return app
