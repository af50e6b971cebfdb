{#-
    Every key whose last change is an INSERT, UPDATE or LOAD after the table's last TRUNCATE is
    in current state, and no other key is.
-#}

with

change_log as (
    select * from {{ ref('change_log') }}
),

current_state as (
    select * from {{ ref('current_state') }}
),

table_truncates as (
    select
        feed,
        source_schema,
        source_table,
        max({{ cdc_change_order() }}) as truncate_order
    from change_log
    where operation = 'TRUNCATE'
    group by feed, source_schema, source_table
),

last_changes as (
    select
        feed,
        source_schema,
        source_table,
        primary_key,
        max_by(operation, {{ cdc_change_order() }}) as last_operation,
        max({{ cdc_change_order() }}) as last_order
    from change_log
    where primary_key is not null and operation in ('INSERT', 'UPDATE', 'DELETE', 'LOAD')
    group by feed, source_schema, source_table, primary_key
),

expectations as (
    select
        last_changes.*,
        last_changes.last_operation != 'DELETE'
        and (
            table_truncates.truncate_order is null
            or last_changes.last_order > table_truncates.truncate_order
        ) as is_expected_live
    from last_changes
    left join table_truncates
        on
            last_changes.feed = table_truncates.feed
            and last_changes.source_schema = table_truncates.source_schema
            and last_changes.source_table = table_truncates.source_table
),

mismatches as (
    select
        expectations.feed,
        expectations.source_schema,
        expectations.source_table,
        expectations.primary_key,
        expectations.last_operation,
        expectations.is_expected_live,
        current_state.primary_key is not null as is_live
    from expectations
    left join current_state
        on
            expectations.feed = current_state.feed
            and expectations.source_schema = current_state.source_schema
            and expectations.source_table = current_state.source_table
            and expectations.primary_key = current_state.primary_key
)

select * from mismatches
where is_expected_live != is_live
