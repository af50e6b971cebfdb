"""cdc_changelog staging layer: pure-Python decoders, Spark glue, CLI and sample-feed simulator."""
