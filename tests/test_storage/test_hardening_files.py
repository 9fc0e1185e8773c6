"""Odd files and databases (issue 25): FIFOs and folders refused before anything opens them,
read-only media readable with no side files left, in-memory databases and missing folders
refused for writing, ``?mode=ro`` honoured, a NUL refused on PostgreSQL; every error one
line naming the thing."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

import polydom
import polydom.errors
import storage
from polydom.app.cli import main

ROOT = Path(__file__).resolve().parents[2]
ATOMS = {"a": "1", "b": "n"}


def _publish(url, alpha: float = 1.0) -> int:
    cands = [polydom.Candidate("a", 0.5, polydom.CostCurve([1.0]), frozenset({"a"})),
             polydom.Candidate("b", 0.5 + 0.1 * alpha, polydom.CostCurve([0.0, 1.0]),
                               frozenset({"b"}))]
    with storage.IndexStore(url) as st:
        build = st.begin_build({"alpha": alpha}, ATOMS)
        st.publish(build, polydom.Index(polydom.PolyDomIndex.build(cands, 0.0, 10.0), ATOMS))
    return build


def _side_files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(("-wal", "-shm")))


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "polydom.app.cli", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})


# ------------------------------------------------------------------- non-regular files
@pytest.mark.parametrize("command", [["inspect"], ["lookup", "--size", "1", "--budget", "1"]])
def test_inspect_and_lookup_refuse_a_fifo_at_once(tmp_path, command):
    fifo = tmp_path / "index.db"
    os.mkfifo(fifo)
    done = _cli(command[0], str(fifo), *command[1:])  # used to block forever in open()
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "is a FIFO, not a regular file" in done.stderr
    assert str(fifo) in done.stderr


def test_python_api_refuses_a_fifo_or_a_folder_for_reading_and_writing(tmp_path):
    fifo = tmp_path / "f.db"
    os.mkfifo(fifo)
    for opener in (polydom.open_index, polydom.list_builds, storage.IndexStore):
        with pytest.raises(storage.StoreNotFoundError, match="is a FIFO"):
            opener(fifo)
    with pytest.raises(storage.StoreNotFoundError, match="is a folder"):
        storage.IndexStore(tmp_path)


# ------------------------------------------------------------------- read-only opens
def test_read_only_commands_leave_no_side_files_and_change_no_byte(tmp_path, capsys):
    path = tmp_path / "s.db"
    _publish(f"sqlite:///{path}")
    assert _side_files(tmp_path) == []  # the writer checkpointed and closed
    before = path.read_bytes()
    assert polydom.open_index(path).lookup(5.0, 10.0).key == "b"
    polydom.list_builds(path)
    assert main(["inspect", str(path)]) == 0
    assert main(["lookup", str(path), "--size", "5", "--budget", "10"]) == 0
    capsys.readouterr()
    assert _side_files(tmp_path) == [] and path.read_bytes() == before


def test_a_reader_follows_builds_published_after_it_opened(tmp_path):
    path = tmp_path / "s.db"
    _publish(f"sqlite:///{path}", alpha=1.0)
    index = polydom.open_index(path)
    _publish(f"sqlite:///{path}", alpha=2.0)
    assert index.refresh() and index.info["build_id"] == 2
    with storage.IndexStore(path) as writer:  # a live writer: its log is read too
        build = writer.begin_build({"alpha": 3.0}, ATOMS)
        cands = [polydom.Candidate("c", 0.9, polydom.CostCurve([1.0]), frozenset({"a"}))]
        writer.publish(build, polydom.Index(polydom.PolyDomIndex.build(cands, 0.0, 10.0),
                                            ATOMS))
        assert _side_files(tmp_path) != []
        assert index.refresh() and index.lookup(5.0, 10.0).key == "c"


@pytest.fixture
def read_only_mount(tmp_path):
    """A folder and a read-only bind mount of it (skipped where mounting is not allowed)."""
    source, target = tmp_path / "rw", tmp_path / "ro"
    source.mkdir()
    target.mkdir()
    if shutil.which("mount") is None:
        pytest.skip("no mount command")
    mounted = subprocess.run(["mount", "--bind", str(source), str(target)],
                             capture_output=True).returncode == 0
    if not mounted:
        pytest.skip("bind mounts are not allowed here (needs root)")
    try:
        if subprocess.run(["mount", "-o", "remount,ro,bind", str(target)],
                          capture_output=True).returncode != 0:
            pytest.skip("cannot remount read-only")
        yield source, target
    finally:
        subprocess.run(["umount", str(target)], capture_output=True)


def test_a_wal_store_on_a_read_only_mount_is_readable(read_only_mount, capsys):
    source, target = read_only_mount
    _publish(f"sqlite:///{source / 's.db'}")
    with pytest.raises(OSError):  # the mount is read-only indeed
        (target / "probe").write_text("x")
    path = target / "s.db"
    assert polydom.open_index(path).lookup(5.0, 10.0).key == "b"
    assert [b.build_id for b in polydom.list_builds(path)] == [1]
    assert main(["inspect", str(path)]) == 0
    capsys.readouterr()
    with pytest.raises(polydom.errors.StoreLocationError, match=f"'{path}' cannot be written"):
        _publish(f"sqlite:///{path}", alpha=2.0)


# ------------------------------------------------------------------- where a store cannot be
@pytest.mark.parametrize("url", ["sqlite://", "sqlite:///:memory:"])
def test_an_in_memory_database_is_refused_for_storing(url):
    with pytest.raises(polydom.errors.StoreLocationError, match="in-memory SQLite database"):
        _publish(url)


def test_a_store_in_a_missing_folder_is_refused_naming_the_folder(tmp_path):
    missing = tmp_path / "no" / "such"
    with pytest.raises(polydom.errors.StoreLocationError,
                       match=f"folder '{missing}' does not exist"):
        _publish(str(missing / "s.db"))
    assert not (tmp_path / "no").exists()


def test_mode_ro_in_the_url_is_honoured(tmp_path):
    path = tmp_path / "s.db"
    _publish(f"sqlite:///{path}")
    before = path.read_bytes()
    url = f"sqlite:///{path}?mode=ro"
    with pytest.raises(PermissionError, match="read-only"):
        _publish(url, alpha=2.0)
    assert polydom.open_index(url).lookup(5.0, 10.0).key == "b"
    assert path.read_bytes() == before and _side_files(tmp_path) == []


# ------------------------------------------------------------------- PostgreSQL text
@pytest.mark.parametrize("where", ["feature", "key", "learner"])
def test_a_nul_character_is_refused_on_postgresql_in_one_line(pg_url, where):
    atoms = {"a\x00b" if where == "feature" else "a": "1"}
    with storage.IndexStore(pg_url) as st:
        if where == "feature":
            with pytest.raises(ValueError, match="feature name must not contain a NUL"):
                st.begin_build({"alpha": 1.0}, atoms)
            return
        build = st.begin_build({"alpha": 1.0, "run": uuid.uuid4().hex}, atoms)
        cand = polydom.Candidate("k\x00" if where == "key" else "k", 0.5, polydom.CostCurve([1]),
                                 frozenset({"a"}), learner="l\x00" if where == "learner" else None)
        with pytest.raises(ValueError, match=f"{where} of candidate 0 must not contain a NUL"):
            st.publish(build, polydom.Index(polydom.PolyDomIndex.build([cand], 0.0, 1.0), atoms))
        assert st.current_build_id() is None
