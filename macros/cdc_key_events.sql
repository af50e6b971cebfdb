{% macro cdc_key_events(relation) %}
    {#- The row events of change_log rows, for the apply (macros/_macros.yml). -#}
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
