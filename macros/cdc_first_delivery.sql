{% macro cdc_first_delivery(relation, partition_by) %}
    {#-
        Rows of `relation` (a CTE name) keeping the first ingest of each delivery key: re-delivered
        records (the same file landed twice, a replayed dump) keep the earliest batch, file and
        record. `partition_by` is the SQL list of expressions that identify one change.
    -#}
    select * from (
        select
            *,
            row_number() over (
                partition by {{ partition_by }}
                order by ingest_batch_id, source_file, record_index
            ) as delivery_number
        from {{ relation }}
    ) as numbered_deliveries
    where delivery_number = 1
{% endmacro %}
