"""The Store port on PostgreSQL (psycopg 3 with ``psycopg_pool``), for several replicas on one
database; SQLite (``store.sqlite``) stays the embedded default."""

from store.postgres.schema import migrate
from store.postgres.store import PostgresStore

__all__ = ["PostgresStore", "migrate"]
