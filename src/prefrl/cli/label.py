"""``prefrl label``: serve the labelling web app and manage labellers.

Subcommands::

    prefrl label [serve] --store PATH_OR_URL [--port 8000] [--host 127.0.0.1] [--run NAME]
    prefrl label add-user --store PATH_OR_URL NAME [--admin] [--expires-days D]
    prefrl label users --store PATH_OR_URL
    prefrl label export --store PATH_OR_URL [--format csv|json] [--out FILE] [--run NAME]
"""

from __future__ import annotations

import argparse
import json
import sys

from prefrl.storage.store import QueryStore, StoreError

SUBCOMMANDS = ("serve", "add-user", "users", "export")


def _store_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--store", required=True, help="query store: a SQLite file path or a SQLAlchemy URL")
    p.add_argument(
        "--clip-dir", default=None, help="clip folder (default: <sqlite file>.clips; required for PostgreSQL)"
    )


def parser() -> argparse.ArgumentParser:
    """The argument parser, with one sub-parser per subcommand."""
    p = argparse.ArgumentParser(
        prog="prefrl label",
        description="Serve the labelling web app over a query store, or manage its labellers. "
        "Without a subcommand, `serve` is assumed.",
    )
    sub = p.add_subparsers(dest="command", metavar="{serve,add-user,users,export}")
    s = sub.add_parser("serve", help="start the labelling web app (default)")
    _store_args(s)
    s.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to listen on (default: 127.0.0.1; 0.0.0.0 for a team, with TLS in front)",
    )
    s.add_argument("--port", type=int, default=8000, help="TCP port (default: 8000)")
    s.add_argument("--run", default=None, help="only serve this run's queries (default: every run)")
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
    s.add_argument("--log-level", default="warning", help="uvicorn log level (default: warning)")
    a = sub.add_parser("add-user", help="create a labeller and print its sign-in token")
    _store_args(a)
    a.add_argument("name", help="labeller name (unique)")
    a.add_argument("--admin", action="store_true", help="may see the admin page and export labels")
    a.add_argument("--expires-days", type=float, default=None, help="token expiry (default: never)")
    u = sub.add_parser("users", help="list labellers")
    _store_args(u)
    e = sub.add_parser("export", help="write every label (with clip provenance) as CSV or JSON")
    _store_args(e)
    e.add_argument("--format", choices=("csv", "json"), default="csv", help="output format (default: csv)")
    e.add_argument("--out", default="-", help="output file ('-': standard output)")
    e.add_argument("--run", default=None, help="only this run's labels")
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
    if args.command == "users":
        for user in store.users():
            role = "admin" if user.is_admin else "labeller"
            print(f"{user.name}\t{role}\t{store.labelled_count(user.id)} labels")
        return 0
    if args.command == "export":
        from prefrl.storage.stats import export_csv, label_rows

        rows = label_rows(store, args.run)
        text = export_csv(rows) if args.format == "csv" else json.dumps(rows, indent=1)
        if args.out == "-":
            sys.stdout.write(text)
        else:
            with open(args.out, "w", encoding="utf-8") as f:
                f.write(text)
            print(f"wrote {len(rows)} labels to {args.out}", file=sys.stderr)
        return 0
    return serve(store, args.host, args.port, args.run, args.max_body, args.lease, args.log_level)


def serve(
    store: QueryStore, host: str, port: int, run: str | None, max_body: int, lease: float, log: str
) -> int:
    """Run the app under uvicorn until interrupted."""
    import uvicorn

    from prefrl.web.app import create_app

    app = create_app(store, run=run, max_body=max_body, lease_s=lease)
    print(f"prefrl labelling on http://{host}:{port}/ (store {store.where})", file=sys.stderr, flush=True)
    uvicorn.run(app, host=host, port=port, log_level=log)
    return 0
