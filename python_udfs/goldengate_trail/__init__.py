"""Feed format ``goldengate_trail``: Oracle GoldenGate trail files, everything in this folder.

- ``decoder.py``: the pure decoder (bytes in, records and rejects out; no Spark, no I/O) and
  its option table ``OPTIONS`` (names, defaults, allowed values), after ``formats/goldengate_trail.md``.
- ``columnar.py``: the fast path (records cut by their lengths, fields read with numpy over
  all records at once, values rendered per column), which leaves a file it cannot read in bulk
  to the decoder, the reference (ADR 0029).
- ``spec.py``: ``FEED_FORMAT``, what the staging job, the configuration check and
  ``cdc scaffold`` use: the raw table's columns, which landing files are data, the decoder's
  context, option checks, Spark types (:class:`python_udfs.feed_format.FeedFormat`).
- ``simulator/goldengate_trail.py`` (outside the runtime package) writes files of this format.
"""
