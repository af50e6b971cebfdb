"""The sample-feed simulator: a small source database and what each replication product writes.

Not part of the runtime package (``python_udfs`` imports it only for ``cdc demo``), and the
decoders import nothing from it. :mod:`simulator.database` runs the seeded workload and holds
the final state (the end-to-end oracle's ground truth); :mod:`simulator.feeds` writes it in a
feed format through that format's writer, one module per format named as the decoder it
inverts: :mod:`simulator.qlik_change_tables`, :mod:`simulator.qlik_kafka`,
:mod:`simulator.goldengate_trail`, :mod:`simulator.hirdb_update_sql`,
:mod:`simulator.linkexpress_extract`.
"""
