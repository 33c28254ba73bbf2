"""Running a store: what it holds, a backup, a retention period, a user erased (offline).

The default store is one folder: ``memory.sqlite3`` (the database: the log, summaries,
sessions, users; the source of truth) and Chroma's files (the facts, and with an embedder
the vectors: derived from the log, but re-deriving them calls the summarizer and the
embedder again). Back up both. With PostgreSQL and a Chroma server: ``pg_dump`` and the
server's ``--path`` folder.
"""

import shutil
import sqlite3
import tempfile
import time
from contextlib import closing
from pathlib import Path

from langchain_recursive_memory.core import HybridMemory, MemoryStore, Turn

folder = Path(tempfile.mkdtemp())
store = MemoryStore.persistent(folder)  # the database and Chroma, in this folder
for user_id, session_id in [("ada", "ada-1"), ("ada", "ada-2"), ("bo", "bo-1")]:
    memory = HybridMemory(session_id, user_id=user_id, store=store, max_tokens=600)
    memory.add([Turn(role="user", text=f"Hi, I'm {user_id}."), Turn(role="assistant", text="Hi!")])
print("sessions:", [(s.user_id, s.session_id) for s in store.sessions()])

# A backup of the database while the application runs: SQLite's online backup.
database = sqlite3.connect(folder / "memory.sqlite3")
online = sqlite3.connect(Path(tempfile.mkdtemp()) / "memory.sqlite3")
with closing(database), closing(online):
    database.backup(online)
    turns = online.execute("SELECT count(*) FROM lrm_turns").fetchone()[0]
print("online backup:", turns, "turns")

# The whole folder (database and Chroma) once no process writes to it.
store.close()
backup = Path(tempfile.mkdtemp()) / "memory"
shutil.copytree(folder, backup, ignore=shutil.ignore_patterns(".lrm-process.lock"))
restored = MemoryStore.persistent(backup)
print("restored:", len(restored.sessions()), "sessions,", len(restored.users()), "users")

# Retention, e.g. from a daily job: sessions not written for 30 days are deleted.
store = MemoryStore.persistent(folder)
print("expired today:", store.expire(older_than=30 * 86400))
in_31_days = time.time() + 31 * 86400  # as the job would run a month from now
print("expired then:", sorted(store.expire(older_than=30 * 86400, now=in_31_days)))

# The right to erasure: every session, fact, vector and node of one user.
print("forgotten:", restored.forget_user("default", "bo"))
print("left:", [(s.user_id, s.session_id) for s in restored.sessions()])
