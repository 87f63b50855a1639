"""Two kernels on one store file: claims, concurrent writes, and a writer killed mid-way."""

from __future__ import annotations

import multiprocessing
import os
import signal
import sqlite3
import sys
from pathlib import Path

import pytest
import session_workers

from jupyter_agent.session import Store
from tests.stored import stored_messages

SPAWN = multiprocessing.get_context("spawn")

pytestmark = pytest.mark.timeout(300)


def _join_all(processes: list[multiprocessing.process.BaseProcess]) -> None:
    for process in processes:
        process.join(timeout=240)
        assert process.exitcode == 0, f"worker exited with {process.exitcode}"


def test_simplest_use(db_path: Path) -> None:
    with Store(db_path) as store:
        store.append_messages("s", None, [{"role": "user", "content": "from the parent"}])
    results = SPAWN.Queue()
    barrier = SPAWN.Barrier(1)
    child = SPAWN.Process(
        target=session_workers.append_many, args=(str(db_path), "child", 1, barrier, results)
    )
    child.start()
    assert results.get(timeout=120) == ("child", [])
    _join_all([child])
    with Store(db_path) as store:
        assert [m["content"] for m in stored_messages(store, "shared")] == ["child-0"]


def test_claim_race_between_two_processes(db_path: Path) -> None:
    run_ids = [f"run-{i}" for i in range(60)]
    with Store(db_path) as store:
        for run_id in run_ids:
            store.create_run(run_id, "s", "plan")
            store.suspend(run_id, {"run": run_id}, call_id="call")
    barrier = SPAWN.Barrier(2)
    results = SPAWN.Queue()
    workers = [
        SPAWN.Process(
            target=session_workers.claim_all, args=(str(db_path), run_ids, barrier, results)
        )
        for _ in range(2)
    ]
    for worker in workers:
        worker.start()
    reports = [results.get(timeout=240) for _ in workers]
    _join_all(workers)

    assert [errors for _, errors in reports] == [[], []]
    won = [run_id for runs, _ in reports for run_id in runs]
    assert sorted(won) == sorted(run_ids)  # each run claimed once, none lost


def test_two_processes_append_to_one_session(db_path: Path) -> None:
    Store(db_path).close()  # create the file and schema before the race
    barrier = SPAWN.Barrier(2)
    results = SPAWN.Queue()
    workers = [
        SPAWN.Process(
            target=session_workers.append_many, args=(str(db_path), tag, 200, barrier, results)
        )
        for tag in ("a", "b")
    ]
    for worker in workers:
        worker.start()
    reports = dict(results.get(timeout=240) for _ in workers)
    _join_all(workers)

    assert reports == {"a": [], "b": []}  # no "database is locked", no other error
    with Store(db_path) as store:
        contents = [m["content"] for m in stored_messages(store, "shared")]
    assert len(contents) == 400
    for tag in ("a", "b"):
        assert [c for c in contents if c.startswith(f"{tag}-")] == [f"{tag}-{i}" for i in range(200)]


def test_two_processes_open_a_new_file_at_once(db_path: Path) -> None:
    barrier = SPAWN.Barrier(2)
    results = SPAWN.Queue()
    workers = [
        SPAWN.Process(
            target=session_workers.append_many, args=(str(db_path), tag, 5, barrier, results)
        )
        for tag in ("a", "b")
    ]
    for worker in workers:
        worker.start()
    reports = dict(results.get(timeout=240) for _ in workers)
    _join_all(workers)
    assert reports == {"a": [], "b": []}


def _assert_intact(db_path: Path) -> None:
    raw = sqlite3.connect(db_path)
    try:
        assert raw.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    finally:
        raw.close()


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL is POSIX")
def test_writer_killed_inside_a_transaction_loses_only_that_transaction(db_path: Path) -> None:
    ready = SPAWN.Event()
    writer = SPAWN.Process(target=session_workers.commit_then_hang, args=(str(db_path), 25, ready))
    writer.start()
    assert ready.wait(timeout=240)
    wal = db_path.with_name(db_path.name + "-wal")
    assert wal.stat().st_size > 2_000_000  # the uncommitted pages did reach the disk
    os.kill(writer.pid, signal.SIGKILL)  # type: ignore[arg-type]
    writer.join(timeout=60)
    assert writer.exitcode == -signal.SIGKILL

    _assert_intact(db_path)
    with Store(db_path) as store:
        contents = [m["content"] for m in stored_messages(store, "s")]
        assert contents == [f"committed-{i}" for i in range(25)]
        # The dead writer's lock is gone: a new write goes through.
        assert store.append_messages("s", None, [{"role": "user", "content": "after"}]) == [26]


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL is POSIX")
def test_writer_killed_at_a_random_point_keeps_every_commit(db_path: Path) -> None:
    Store(db_path).close()
    # No lock: a child killed while holding it would hang the parent.
    done = SPAWN.Value("i", 0, lock=False)
    writer = SPAWN.Process(target=session_workers.commit_forever, args=(str(db_path), done))
    writer.start()
    while done.value < 150 and writer.is_alive():
        writer.join(timeout=0.01)
    os.kill(writer.pid, signal.SIGKILL)  # type: ignore[arg-type]
    writer.join(timeout=60)
    reported = done.value

    _assert_intact(db_path)
    with Store(db_path) as store:
        contents = [m["content"] for m in stored_messages(store, "s")]
    # The kill may land between a commit and the counter update: at most one extra message.
    assert reported >= 150
    assert len(contents) in (reported, reported + 1)
    assert contents == [f"m-{i}" for i in range(len(contents))]


def _append_in_forked_child(store: Store) -> None:
    store.append_messages("s", None, [{"role": "user", "content": "from the fork"}])


@pytest.mark.skipif(sys.platform == "win32", reason="fork is POSIX")
def test_forked_child_opens_its_own_connection(store: Store) -> None:
    store.append_messages("s", None, [{"role": "user", "content": "before the fork"}])
    child = multiprocessing.get_context("fork").Process(
        target=_append_in_forked_child, args=(store,)
    )
    child.start()
    child.join(timeout=120)
    assert child.exitcode == 0
    store.append_messages("s", None, [{"role": "user", "content": "after the fork"}])
    assert [m["content"] for m in stored_messages(store, "s")] == [
        "before the fork",
        "from the fork",
        "after the fork",
    ]
