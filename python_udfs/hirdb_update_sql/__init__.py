"""Feed format ``hirdb_update_sql``: Hitachi HiRDB Datareplicator update-SQL files, everything in this folder.

- ``decoder.py``: the pure decoder (bytes in, records and rejects out; no Spark, no I/O) and
  its option table ``OPTIONS`` (names, defaults, allowed values), after ``formats/hirdb_update_sql.md``.
- ``spec.py``: ``FEED_FORMAT``, what the staging job, the configuration check and
  ``cdc scaffold`` use: the raw table's columns, which landing files are data, the decoder's
  context, option checks, Spark types (:class:`python_udfs.feed_format.FeedFormat`).
- ``simulator/hirdb_update_sql.py`` (outside the runtime package) writes files of this format.
"""
