#!/usr/bin/env bash
# Starts a throwaway PostgreSQL server for the store and web tests; prints its SQLAlchemy URL.
#
#   export PREFRL_TEST_POSTGRES_URL="$(bash scripts/postgres.sh)"
#
# Debian's postgresql package is installed first when missing (as root). The server listens on
# 127.0.0.1 on a free port, trusts local connections, and keeps its data in a temporary
# directory; `bash scripts/postgres.sh stop DIR` stops it (DIR is printed on stderr).
set -euo pipefail
if [ "${1:-}" = "stop" ]; then
  dir="$2"
  bin="$(cat "$dir/bin")"
  if [ "$(id -u)" = "0" ]; then
    su postgres -s /bin/bash -c "'$bin/pg_ctl' -D '$dir/data' -m fast stop" >/dev/null
  else
    "$bin/pg_ctl" -D "$dir/data" -m fast stop >/dev/null
  fi
  exit 0
fi
find_bin() { ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1; }
bin="$(find_bin)"
if [ -z "$bin" ]; then
  if [ "$(id -u)" != "0" ]; then
    echo "postgres.sh: PostgreSQL is not installed (apt-get install postgresql) and this is not root" >&2
    exit 1
  fi
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql; } >/dev/null
  bin="$(find_bin)"
fi
dir="$(mktemp -d /tmp/prefrl-postgres.XXXXXX)"
echo "$bin" > "$dir/bin"
port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
as_owner() {
  if [ "$(id -u)" = "0" ]; then  # initdb refuses to run as root: the package's postgres user runs it
    su postgres -s /bin/bash -c "$1"
  else
    bash -c "$1"
  fi
}
[ "$(id -u)" = "0" ] && chown postgres "$dir"
as_owner "'$bin/initdb' -D '$dir/data' -U prefrl --auth=trust -E UTF8" >/dev/null
as_owner "'$bin/pg_ctl' -D '$dir/data' -l '$dir/log' -w -o \"-p $port -k '$dir' -c listen_addresses=127.0.0.1\" start" >/dev/null
as_owner "'$bin/createdb' -h 127.0.0.1 -p $port -U prefrl prefrl_test"
echo "postgres.sh: PostgreSQL on 127.0.0.1:$port (data in $dir; stop with: bash scripts/postgres.sh stop $dir)" >&2
echo "postgresql+psycopg://prefrl@127.0.0.1:$port/prefrl_test"
