"""Feed format ``qlik_kafka``: Qlik Replicate Kafka target topic dumps, everything in this folder.

- ``decoder.py``: the pure decoder (bytes in, records and rejects out; no Spark, no I/O) and
  its option table ``OPTIONS`` (names, defaults, allowed values), after ``formats/qlik_kafka_messages.md``.
- ``columnar.py``: the fast path (``pyarrow.json`` over a JSON Lines dump, numpy over Avro
  payloads), which leaves what it cannot read to the decoder, the reference (ADR 0032).
- ``spec.py``: ``FEED_FORMAT``, what the staging job, the configuration check and
  ``cdc scaffold`` use: the raw table's columns, which landing files are data, the decoder's
  context, option checks, Spark types (:class:`python_udfs.feed_format.FeedFormat`).
- ``simulator/qlik_kafka.py`` (outside the runtime package) writes files of this format.
"""
