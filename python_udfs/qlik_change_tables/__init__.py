"""Feed format ``qlik_change_tables``: Qlik Replicate change tables and full-load files, everything in this folder.

- ``decoder.py``: the pure decoder (bytes in, records and rejects out; no Spark, no I/O) and
  its option table ``OPTIONS`` (names, defaults, allowed values), after ``formats/qlik_change_tables.md``;
  the reference path (record by record).
- ``columnar.py``: the fast path: Parquet and delimited text decoded column by column with
  Arrow compute, the same rows as the reference (ADR 0012), behind ``fast_or_reference``.
- ``spec.py``: ``FEED_FORMAT``, what the staging job, the configuration check and
  ``cdc scaffold`` use: the raw table's columns, which landing files are data, the decoder's
  context, option checks, Spark types (:class:`python_udfs.feed_format.FeedFormat`).
- ``simulator/qlik_change_tables.py`` (outside the runtime package) writes files of this format.
"""
