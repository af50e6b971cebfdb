{#-
    One row per live key of every catalog table (long form): the current version of each key
    that is not deleted (DESIGN.md §5, §6), from the current rows of history. The row is the
    map of column to canonical text built by applying the change log in change order: INSERT
    and LOAD set the row, UPDATE overlays the columns its after image carries, a key change moves the row to the
    new key, DELETE removes it, TRUNCATE and full loads remove every earlier row of the table.

    A Delta table (ADR 0038) that each run updates by one MERGE: the live keys whose current
    version differs from the table's are updated or inserted, the keys no longer live are
    deleted, and every other row stays as it is, so the table's Change Data Feed holds what
    the run changed. What differs is read from history and the table itself ({{ this }}), so a
    run killed after history's MERGE and before this one is merged by the next run. Partitioned by feed and table_key: a typed
    per-table view reads its own table's files only.
-#}

{{ config(
    materialized='incremental',
    incremental_strategy='merge',
    file_format='delta',
    unique_key='current_state_id',
    cdc_delete_column='cdc_is_removed',
    partition_by=['feed', 'table_key'],
    tblproperties={'delta.enableChangeDataFeed': 'true'},
) }}

with

current_versions as (
    select * from {{ ref('history') }}
    where is_current and not is_deleted
),

live_keys as (
    select
        to_json(array(feed, source_schema, source_table, primary_key)) as current_state_id,
        feed,
        source_schema,
        source_table,
        primary_key,
        key_id,
        row,
        opened_by_operation as last_operation,
        valid_from_position as last_change_position,
        valid_from as last_committed_at,
        table_key
    from current_versions
),

{% if is_incremental() %}
merged as (
    select * from {{ this }}
),

changed_keys as (
    -- live keys the table lacks, or holds with another version (the row compared as its
    -- sorted entries: maps have no equality)
    select
        live_keys.*,
        false as cdc_is_removed
    from live_keys
    left anti join merged
        on
            live_keys.current_state_id = merged.current_state_id
            and live_keys.last_change_position <=> merged.last_change_position
            and live_keys.last_operation <=> merged.last_operation
            and live_keys.last_committed_at <=> merged.last_committed_at
            and live_keys.key_id <=> merged.key_id
            and array_sort(map_entries(live_keys.row)) = array_sort(map_entries(merged.row))
),

removed_keys as (
    -- keys the table holds that are no longer live (deleted, truncated, moved by a key change)
    select
        merged.*,
        true as cdc_is_removed
    from merged
    left anti join live_keys on merged.current_state_id = live_keys.current_state_id
),

final as (
    select * from changed_keys
    union all
    select * from removed_keys
)
{% else %}
    final as (
        select * from live_keys
    )
{% endif %}

select * from final
