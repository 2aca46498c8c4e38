"""Rows a database file holds, counted with plain sqlite3 (not through the Database class the
tests are checking)."""

import sqlite3


def measurement_rows(path) -> int:
    conn = sqlite3.connect(str(path))
    try:
        return conn.execute("SELECT COUNT(*) FROM measurements").fetchone()[0]
    finally:
        conn.close()
