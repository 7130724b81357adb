"""``prefrl label``: serve the labelling web app and manage labellers.

Subcommands::

    prefrl label [serve] --store PATH_OR_URL [--port 8000] [--host 127.0.0.1] [--run ID_OR_NAME]
                         [--forwarded-allow-ips IPS [--proxy-header x-forwarded-for|forwarded]]
    prefrl label add-user --store PATH_OR_URL NAME [--admin] [--expires-days D]
    prefrl label renew --store PATH_OR_URL NAME [--expires-days D]
    prefrl label revoke --store PATH_OR_URL NAME
    prefrl label users --store PATH_OR_URL
    prefrl label export --store PATH_OR_URL [--format csv|json] [--out FILE] [--run ID_OR_NAME]

``--run`` takes a run's id (printed by ``prefrl train``, in ``RUN/config.json``) or its
folder's name (then the newest run of that name). ``--expires-days`` is a positive, finite
number of days, at most :data:`MAX_EXPIRES_DAYS` (leave it out for a token that never expires).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import NoReturn

from prefrl.storage.records import StoreError
from prefrl.storage.store import QueryStore

SUBCOMMANDS = ("serve", "add-user", "renew", "revoke", "users", "export")
MAX_EXPIRES_DAYS = 36_500.0  # 100 years: beyond that, leave --expires-days out (never expires)


def expires_days(text: str) -> float:
    """``--expires-days``: a positive, finite number of days, at most :data:`MAX_EXPIRES_DAYS`."""
    try:
        days = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of days: {text!r}") from None
    if not 0 < days <= MAX_EXPIRES_DAYS:  # NaN fails too
        raise argparse.ArgumentTypeError(
            f"must be a positive number of days, at most {MAX_EXPIRES_DAYS:.0f} (leave it out for a token "
            f"that never expires), got {text!r}"
        )
    return days


def forwarded_allow_ips(text: str) -> str:
    """``--forwarded-allow-ips``: comma-separated IP addresses or networks."""
    from prefrl.web.proxies import TrustedProxies

    try:
        TrustedProxies.parse(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None
    return text


def expiry_text(expires: float | None) -> str:
    """`` until <local time>`` for a stored expiry, whatever is stored (NaN, infinities, huge)."""
    if expires is None:
        return ""
    try:
        return " until " + time.strftime("%Y-%m-%d %H:%M", time.localtime(expires))
    except (OverflowError, OSError, ValueError):  # inf, 1e300, NaN: time cannot show them
        return " until after the year 9999" if expires > 0 else f" (invalid expiry {expires!r} in the store)"


class _Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line (naming the option), then exit status 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _store_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--store", required=True, help="query store: a SQLite file path or a SQLAlchemy URL")
    p.add_argument(
        "--clip-dir", default=None, help="clip folder (default: <sqlite file>.clips; required for PostgreSQL)"
    )


def parser() -> argparse.ArgumentParser:
    """The argument parser, with one sub-parser per subcommand."""
    p = _Parser(
        prog="prefrl label",
        description="Serve the labelling web app over a query store, or manage its labellers. "
        "Without a subcommand, `serve` is assumed.",
    )
    sub = p.add_subparsers(dest="command", metavar="{" + ",".join(SUBCOMMANDS) + "}")
    s = sub.add_parser("serve", help="start the labelling web app (default)")
    _store_args(s)
    s.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to listen on (default: 127.0.0.1; 0.0.0.0 for a team, with TLS in front)",
    )
    s.add_argument("--port", type=int, default=8000, help="TCP port (default: 8000)")
    s.add_argument(
        "--run",
        default=None,
        help="only serve this run's queries and clips: its id, or its folder's name (the newest run "
        "of that name) (default: every run)",
    )
    s.add_argument(
        "--max-body",
        type=int,
        default=16_384,
        help="largest request body accepted, in bytes (default: 16384)",
    )
    s.add_argument(
        "--lease",
        type=float,
        default=30.0,
        help="seconds a shown query is reserved for its labeller (default: 30)",
    )
    s.add_argument(
        "--forwarded-allow-ips",
        type=forwarded_allow_ips,
        default=None,
        help="reverse proxies (comma-separated addresses or networks, e.g. 10.0.0.1,127.0.0.1) whose "
        "--proxy-header gives the client's address for the sign-in throttle (default: none, the "
        "connecting address is the client's; headers from anyone else are ignored)",
    )
    s.add_argument(
        "--proxy-header",
        choices=("x-forwarded-for", "forwarded"),
        default="x-forwarded-for",
        help="the header those proxies set; the other is ignored (default: x-forwarded-for)",
    )
    s.add_argument("--log-level", default="warning", help="uvicorn log level (default: warning)")
    a = sub.add_parser("add-user", help="create a labeller and print its sign-in token")
    _store_args(a)
    a.add_argument("name", help="labeller name (unique)")
    a.add_argument("--admin", action="store_true", help="may see the admin page and export labels")
    a.add_argument(
        "--expires-days",
        type=expires_days,
        default=None,
        help="token valid this many days (default: never expires)",
    )
    n = sub.add_parser("renew", help="give a labeller a new token (the old one stops working)")
    _store_args(n)
    n.add_argument("name", help="labeller name")
    n.add_argument(
        "--expires-days",
        type=expires_days,
        default=None,
        help="token valid this many days (default: never expires)",
    )
    r = sub.add_parser("revoke", help="make a labeller's token invalid now (its labels stay)")
    _store_args(r)
    r.add_argument("name", help="labeller name")
    u = sub.add_parser("users", help="list labellers")
    _store_args(u)
    e = sub.add_parser("export", help="write every label (with clip provenance) as CSV or JSON")
    _store_args(e)
    e.add_argument("--format", choices=("csv", "json"), default="csv", help="output format (default: csv)")
    e.add_argument("--out", default="-", help="output file ('-': standard output)")
    e.add_argument("--run", default=None, help="only this run's labels (its id or folder name)")
    return p


def main(argv: list[str]) -> int:
    """Entry point of ``prefrl label``."""
    argv = list(argv)
    if not argv or (argv[0] not in SUBCOMMANDS and argv[0] not in ("-h", "--help")):
        argv = ["serve", *argv]
    args = parser().parse_args(argv)
    try:
        store = QueryStore(args.store, args.clip_dir)
    except StoreError as err:
        print(f"prefrl label: {err}", file=sys.stderr)
        return 2
    if args.command == "add-user":
        try:
            days = args.expires_days
            token = store.add_user(
                args.name, admin=args.admin, expires_in_s=None if days is None else days * 86400
            )
        except (StoreError, ValueError) as err:
            print(f"prefrl label add-user: {err}", file=sys.stderr)
            return 2
        print(token)
        print(
            f"created {'admin' if args.admin else 'labeller'} {args.name!r}; give them this token",
            file=sys.stderr,
        )
        return 0
    if args.command in ("renew", "revoke"):
        return _token_command(store, args)
    if args.command == "users":
        from prefrl.storage.tokens import user_rows

        for u in user_rows(store):
            role = "admin" if u["is_admin"] else "labeller"
            state = "active" if u["active"] else "revoked or expired"
            until = expiry_text(u["expires"]) if u["active"] else ""
            print(f"{u['name']}\t{role}\t{u['labels']} labels\ttoken {state}{until}")
        return 0
    if args.command == "export":
        from prefrl.storage.runs import find_run
        from prefrl.storage.stats import export_csv, label_rows

        run_id = None if args.run is None else find_run(store, args.run)
        if args.run is not None and run_id is None:
            print(f"prefrl label export: no run {args.run!r} in {store.where}", file=sys.stderr)
            return 2
        rows = label_rows(store, run_id)
        text = export_csv(rows) if args.format == "csv" else json.dumps(rows, indent=1)
        if args.out == "-":
            sys.stdout.write(text)
        else:
            with open(args.out, "w", encoding="utf-8") as f:
                f.write(text)
            print(f"wrote {len(rows)} labels to {args.out}", file=sys.stderr)
        return 0
    return serve(store, args)


def _token_command(store: QueryStore, args: argparse.Namespace) -> int:
    """``renew`` (print a new token) or ``revoke``."""
    from prefrl.storage.tokens import renew, revoke

    if args.command == "revoke":
        if not revoke(store, args.name):
            print(f"prefrl label revoke: no labeller named {args.name!r}", file=sys.stderr)
            return 2
        print(
            f"revoked {args.name!r}'s token (a running server stops accepting it within "
            f"{store.TOKEN_TTL_S:.0f} s)",
            file=sys.stderr,
        )
        return 0
    days = args.expires_days
    try:
        token = renew(store, args.name, None if days is None else days * 86400)
    except (StoreError, ValueError) as err:
        print(f"prefrl label renew: {err}", file=sys.stderr)
        return 2
    print(token)
    print(f"new token for {args.name!r}; the old one no longer works", file=sys.stderr)
    return 0


def serve(store: QueryStore, args: argparse.Namespace) -> int:
    """Run the app under uvicorn until interrupted."""
    import uvicorn

    from prefrl.web.app import create_app

    app = create_app(
        store,
        run=args.run,
        max_body=args.max_body,
        lease_s=args.lease,
        forwarded_allow_ips=args.forwarded_allow_ips,
        proxy_header=args.proxy_header,
    )
    where = f"http://{args.host}:{args.port}/"
    print(f"prefrl labelling on {where} (store {store.where})", file=sys.stderr, flush=True)
    # proxy headers are the app's business (only from --forwarded-allow-ips): uvicorn's own
    # handling would believe X-Forwarded-For from 127.0.0.1 (or $FORWARDED_ALLOW_IPS) by default
    uvicorn.run(app, host=args.host, port=args.port, log_level=args.log_level, proxy_headers=False)
    return 0
