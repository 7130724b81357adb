"""``prefrl label`` subcommands: add-user prints a working token, export writes every label."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import sqlalchemy as sa

from prefrl.cli.main import main
from prefrl.storage import schema as S
from prefrl.storage.store import QueryStore
from prefrl.teachers.human import StoreTeacher
from tests.storage.helpers import make_fragments


def test_add_user_and_export(tmp_path, capsys) -> None:
    db = str(tmp_path / "s.db")
    StoreTeacher(db).submit(make_fragments(2), np.array([[0, 1]])).result()
    assert main(["label", "add-user", "--store", db, "ann"]) == 0
    token = capsys.readouterr().out.strip()
    store = QueryStore(db)
    user = store.user_for_token(token)
    assert user is not None and user.name == "ann" and not user.is_admin
    assert main(["label", "add-user", "--store", db, "ann"]) == 2  # names are unique
    assert "already exists" in capsys.readouterr().err
    store.add_label(1, user.id, "equal", 400)
    out = tmp_path / "labels.json"
    assert main(["label", "export", "--store", db, "--format", "json", "--out", str(out)]) == 0
    rows = json.loads(out.read_text())
    assert [(r["labeller"], r["answer"], r["response_ms"]) for r in rows] == [("ann", "equal", 400)]
    assert main(["label", "users", "--store", db]) == 0
    assert "ann\tlabeller\t1 labels" in capsys.readouterr().out


def test_bad_store_is_a_clear_error(tmp_path, capsys) -> None:
    junk = tmp_path / "junk.db"
    junk.write_text("not a database" * 50)
    assert main(["label", "users", "--store", str(junk)]) == 2
    assert "cannot open as a prefrl query store" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["add-user", "renew"])
@pytest.mark.parametrize("days", ["nan", "inf", "-inf", "0", "-1", "abc", "1e400", ""])
def test_bad_expires_days_is_refused_in_one_line(tmp_path, capsys, command: str, days: str) -> None:
    db = str(tmp_path / "s.db")
    store = QueryStore(db)
    old = store.add_user("bob")
    who = "ann" if command == "add-user" else "bob"
    with pytest.raises(SystemExit) as exit_:
        main(["label", command, "--store", db, who, f"--expires-days={days}"])  # "=": "-inf" is no option
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(
        f"prefrl label {command}: error: argument --expires-days: "
    )
    assert repr(days) in err and "Traceback" not in err
    assert [u.name for u in store.users()] == ["bob"] and QueryStore(db).user_for_token(old) is not None


def test_users_lists_any_stored_expiry(tmp_path, capsys) -> None:
    """Whatever an expiry column holds (written by another tool or version), `users` lists it."""
    db = str(tmp_path / "s.db")
    assert main(["label", "add-user", "--store", db, "ok", "--expires-days", "0.5"]) == 0
    store = QueryStore(db)
    stored = {"inf": math.inf, "minus_inf": -math.inf, "huge": 1e300, "tiny": -1e300, "never": None}
    for name, expires in stored.items():
        store.add_user(name)
        with store.write() as c:
            c.execute(sa.update(S.users).where(S.users.c.name == name).values(expires=expires))
    capsys.readouterr()
    assert main(["label", "users", "--store", db]) == 0
    rows = dict(line.split("\t", 1) for line in capsys.readouterr().out.splitlines())
    assert rows["ok"].startswith("labeller\t0 labels\ttoken active until 20")
    assert rows["inf"] == rows["huge"] == "labeller\t0 labels\ttoken active until after the year 9999"
    assert rows["minus_inf"] == rows["tiny"] == "labeller\t0 labels\ttoken revoked or expired"
    assert rows["never"] == "labeller\t0 labels\ttoken active"


def test_bad_trusted_proxies_are_refused_in_one_line(tmp_path, capsys) -> None:
    for bad in ("*", "proxy.example", "10.0.0.1,300.1.1.1"):
        with pytest.raises(SystemExit):
            main(["label", "serve", "--store", str(tmp_path / "s.db"), "--forwarded-allow-ips", bad])
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "argument --forwarded-allow-ips: " in err, err
