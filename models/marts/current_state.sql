{#-
    One row per live key of every catalog table (long form): the current version of each key
    that is not deleted (DESIGN.md §5, §6), from int_key_state. The row is the map of column to
    canonical text built by applying the change log in change order: INSERT and LOAD set the
    row, UPDATE overlays the columns its after image carries, a key change moves the row to the
    new key, DELETE removes it, TRUNCATE and full loads remove every earlier row of the table.

    A view of the key state (ADR 0028): a run writes the state once, not a second table of its
    live keys. The state is partitioned by feed and table_key, so a typed per-table view reads
    its own table's folder only.
-#}

{{ config(materialized='view') }}

with

key_state as (
    select * from {{ ref('int_key_state') }}
),

final as (
    select
        to_json(array(key_state.feed, key_state.source_schema, key_state.source_table, key_state.primary_key)) as current_state_id,
        key_state.feed,
        key_state.source_schema,
        key_state.source_table,
        key_state.primary_key,
        key_state.key_id,
        current_version.row,
        current_version.operation as last_operation,
        current_version.opened_order.change_position as last_change_position,
        current_version.opened_at as last_committed_at,
        key_state.table_key
    from key_state
    where not current_version.is_deleted
)

select * from final
