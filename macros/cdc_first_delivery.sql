{% macro cdc_first_delivery(relation, partition_by) %}
    {#- The first ingest of each change; re-deliveries change nothing (macros/_macros.yml). -#}
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
