"""``prefrl label`` subcommands: add-user prints a working token, export writes every label."""

from __future__ import annotations

import json

import numpy as np

from prefrl.cli.main import main
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
