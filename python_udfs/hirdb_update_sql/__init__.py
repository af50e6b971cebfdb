"""Feed format ``hirdb_update_sql``: Hitachi HiRDB Datareplicator update-SQL files, everything in this folder.

- ``decoder.py``: the pure decoder (bytes in, records and rejects out; no Spark, no I/O) and
  its option table ``OPTIONS`` (names, defaults, allowed values), after ``formats/hirdb_update_sql.md``.
- ``columnar.py``: the fast path (each statement shape parsed once, one RE2 pattern per shape
  cutting the literals out of all its lines), which leaves what it cannot read to the decoder,
  the reference (ADR 0032).
- ``spec.py``: ``FEED_FORMAT``, what the staging job, the configuration check and
  ``cdc scaffold`` use: the raw table's columns, which landing files are data, the decoder's
  context, option checks, Spark types (:class:`python_udfs.feed_format.FeedFormat`).
- ``simulator/hirdb_update_sql.py`` (outside the runtime package) writes files of this format.
"""
