{% macro cdc_key_events(relation) %}
    {#-
        Rows (feed, source_schema, source_table, primary_key, key_id, event) of the row events of the
        change_log rows in `relation` (a CTE name), for the apply (DESIGN.md §6):
        INSERT and LOAD are SET (the row becomes the after image), UPDATE is OVERLAY, DELETE is
        REMOVE. An UPDATE whose before image has another key (before_primary_key) is a REMOVE of
        the old key and a SET of the new key with the before image overlaid by the after image;
        the SET names the old key (source_key_id), whose row it carries (int_key_change_rows).
        LOAD events carry their transaction (load_transaction), so that the reset of a full load
        is not applied to the keys the load itself sets (int_apply_events_gathered, `reset_events`).
        SET and OVERLAY events carry the change's table_columns (cdc_table_columns, ADR 0024).
    -#}
    select
        feed,
        source_schema,
        source_table,
        primary_key,
        key_id,
        named_struct(
            'event_order', {{ cdc_change_order() }},
            'event_rank', 1,
            'kind', case
                when operation = 'DELETE' then 'REMOVE'
                when operation != 'UPDATE' then 'SET'
                when before_primary_key is not null and before_primary_key != primary_key then 'SET'
                else 'OVERLAY'
            end,
            'image', case
                when operation = 'DELETE' then before_image
                when operation = 'UPDATE' and before_primary_key is not null and before_primary_key != primary_key
                    then {{ cdc_overlay('before_image', 'after_image') }}
                else after_image
            end,
            'committed_at', committed_at,
            'operation', operation,
            'load_transaction', case when operation = 'LOAD' then transaction_id end,
            'table_columns', table_columns,
            'source_key_id', case
                when operation = 'UPDATE' and before_primary_key is not null and before_primary_key != primary_key
                    then before_key_id
            end
        ) as event
    from {{ relation }}
    where primary_key is not null and operation in ('INSERT', 'UPDATE', 'DELETE', 'LOAD')
    union all
    select
        feed,
        source_schema,
        source_table,
        before_primary_key as primary_key,
        before_key_id as key_id,
        named_struct(
            'event_order', {{ cdc_change_order() }},
            'event_rank', 1,
            'kind', 'REMOVE',
            'image', before_image,
            'committed_at', committed_at,
            'operation', operation,
            'load_transaction', cast(null as string),
            'table_columns', cast(null as array<string>),
            'source_key_id', cast(null as string)
        ) as event
    from {{ relation }}
    where
        operation = 'UPDATE'
        and before_primary_key is not null
        and before_primary_key != primary_key
{% endmacro %}
