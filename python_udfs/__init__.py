"""cdc_changelog staging layer: pure-Python decoders, Spark glue and the ``cdc`` CLI.

The sample-feed simulator is the separate ``simulator`` package; only ``cdc demo`` imports it.
"""
