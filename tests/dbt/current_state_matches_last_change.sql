{#-
    Every live key's last change in the change log is not a DELETE, and every key whose last
    change is a DELETE is absent from current state.
-#}

with

change_log as (
    select * from {{ ref('change_log') }}
),

current_state as (
    select * from {{ ref('current_state') }}
),

last_changes as (
    select
        feed,
        source_schema,
        source_table,
        primary_key,
        max_by(operation, {{ cdc_change_order() }}) as last_operation
    from change_log
    where primary_key is not null and operation in ('INSERT', 'UPDATE', 'DELETE', 'LOAD')
    group by feed, source_schema, source_table, primary_key
),

mismatches as (
    select
        last_changes.feed,
        last_changes.source_schema,
        last_changes.source_table,
        last_changes.primary_key,
        last_changes.last_operation,
        current_state.primary_key is not null as is_live
    from last_changes
    left join current_state
        on
            last_changes.feed = current_state.feed
            and last_changes.source_schema = current_state.source_schema
            and last_changes.source_table = current_state.source_table
            and last_changes.primary_key = current_state.primary_key
)

select * from mismatches
where (last_operation = 'DELETE') = is_live
