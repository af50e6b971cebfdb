{% macro cdc_committed_batches() %}
    {#-
        Predicate keeping raw rows of committed ingest batches only: a batch commits when its
        manifest rows are written (last step of staging), so rows of a run that was killed
        half way are ignored and re-ingested by the next run. The manifest is broadcast (a
        hint: the metastore has no size for it, so Spark would otherwise shuffle every raw row
        by batch for this semi-join before the model's own shuffles).
    -#}
    ingest_batch_id in (
        select /*+ BROADCAST(ingested_files) */ ingested_files.ingest_batch_id
        from {{ source('cdc', 'raw_ingested_files') }} as ingested_files
    )
{% endmacro %}
