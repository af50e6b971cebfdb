{#-
    One row per live key of every catalog table (long form): the current version of each key
    that is not deleted (DESIGN.md §5, §6), from int_key_state. The row is the map of column to
    canonical text built by applying the change log in change order: INSERT and LOAD set the
    row, UPDATE overlays the columns its after image carries, a key change moves the row to the
    new key, DELETE removes it, TRUNCATE and full loads remove every earlier row of the table.

    Partitioned by feed and table_key (a short hash of the table's names, macro cdc_table_key):
    a typed per-table view reads its own table's folder only, whatever the number of tables.
    The names themselves are not partition values: names from the data may be longer than a
    folder name or a metastore partition value can be, or hold characters a path escapes. Not shuffled by table before the
    write (ADR 0009): int_key_state is partitioned by feed, so each
    table's folder gets the files of its feed's few tasks.
-#}

{{ config(partition_by=['feed', 'table_key']) }}

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
        {{ cdc_table_key_sql('key_state.feed', 'key_state.source_schema', 'key_state.source_table') }} as table_key
    from key_state
    where not current_version.is_deleted
)

select * from final
