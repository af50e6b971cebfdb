{#-
    One row per live key of every catalog table (long form): the row as a map of column to
    canonical text, built by applying the change log in change order (DESIGN.md §6):
    INSERT and LOAD set the row, UPDATE overlays the columns its after image carries (absent
    columns keep their value, an explicit NULL sets NULL), DELETE removes the row, TRUNCATE
    removes every row of the table with an earlier position.
-#}

with

change_log as (
    select * from {{ ref('change_log') }}
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

row_changes as (
    select
        change_log.feed,
        change_log.source_schema,
        change_log.source_table,
        change_log.primary_key,
        change_log.operation,
        change_log.after_image,
        change_log.committed_at,
        {{ cdc_change_order('change_log.') }} as change_order
    from change_log
    left join table_truncates
        on
            change_log.feed = table_truncates.feed
            and change_log.source_schema = table_truncates.source_schema
            and change_log.source_table = table_truncates.source_table
    where
        change_log.primary_key is not null
        and change_log.operation in ('INSERT', 'UPDATE', 'DELETE', 'LOAD')
        and (
            table_truncates.truncate_order is null
            or {{ cdc_change_order('change_log.') }} > table_truncates.truncate_order
        )
),

key_summaries as (
    select
        feed,
        source_schema,
        source_table,
        primary_key,
        max_by(operation, change_order) as last_operation,
        max(change_order) as last_change_order,
        max(case when operation in ('INSERT', 'LOAD', 'DELETE') then change_order end) as last_reset_order,
        max_by(committed_at, change_order) as last_committed_at
    from row_changes
    group by feed, source_schema, source_table, primary_key
),

live_keys as (
    select * from key_summaries
    where last_operation != 'DELETE'
),

changes_since_reset as (
    select
        row_changes.feed,
        row_changes.source_schema,
        row_changes.source_table,
        row_changes.primary_key,
        row_changes.after_image,
        row_changes.change_order
    from row_changes
    inner join live_keys
        on
            row_changes.feed = live_keys.feed
            and row_changes.source_schema = live_keys.source_schema
            and row_changes.source_table = live_keys.source_table
            and row_changes.primary_key = live_keys.primary_key
    where
        row_changes.operation != 'DELETE'
        and (live_keys.last_reset_order is null or row_changes.change_order >= live_keys.last_reset_order)
),

column_changes as (
    select
        feed,
        source_schema,
        source_table,
        primary_key,
        change_order,
        explode(after_image) as (column_name, column_value)
    from changes_since_reset
),

latest_column_values as (
    select
        feed,
        source_schema,
        source_table,
        primary_key,
        column_name,
        max_by(column_value, change_order) as column_value
    from column_changes
    group by feed, source_schema, source_table, primary_key, column_name
),

rows_rebuilt as (
    select
        feed,
        source_schema,
        source_table,
        primary_key,
        map_from_entries(collect_list(struct(column_name, column_value))) as row
    from latest_column_values
    group by feed, source_schema, source_table, primary_key
),

final as (
    select
        to_json(array(live_keys.feed, live_keys.source_schema, live_keys.source_table, live_keys.primary_key))
            as current_state_id,
        live_keys.feed,
        live_keys.source_schema,
        live_keys.source_table,
        live_keys.primary_key,
        coalesce(rows_rebuilt.row, map()) as row,
        live_keys.last_operation,
        live_keys.last_change_order.change_position as last_change_position,
        live_keys.last_committed_at
    from live_keys
    left join rows_rebuilt
        on
            live_keys.feed = rows_rebuilt.feed
            and live_keys.source_schema = rows_rebuilt.source_schema
            and live_keys.source_table = rows_rebuilt.source_table
            and live_keys.primary_key = rows_rebuilt.primary_key
)

select * from final
