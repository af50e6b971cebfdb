{#-
    One row per live key of every catalog table (long form): the current version of each key
    that is not deleted (DESIGN.md §5, §6). The row is the map of column to canonical text
    built by applying the change log in change order: INSERT and LOAD set the row, UPDATE
    overlays the columns its after image carries, a key change moves the row to the new key,
    DELETE removes it, TRUNCATE and full loads remove every earlier row of the table.

    A Delta table (ADR 0038) that each run updates by one MERGE, from the current versions it
    computed for the keys it applies (int_key_versions, the versions history merges too): an
    applied key that is live and differs from the table's row is updated or inserted, an
    applied key no longer live is deleted, and every other row stays as it is, so the table's
    Change Data Feed holds what the run changed. It merges before history (whose current rows
    are the state and the watermark): a run killed between the two applies the same keys
    again, and the comparison with the table makes that a no-op. Built whole (a first run, a
    full refresh, a lost table), it takes the other keys' current rows from the state.
    Partitioned by feed and table_key: a typed per-table view reads its own table's files.
-#}

{{ config(
    materialized='incremental',
    incremental_strategy='merge',
    unique_key='current_state_id',
    cdc_delete_column='cdc_is_removed',
    partition_by=['feed', 'table_key'],
    tblproperties={'delta.enableChangeDataFeed': 'true', 'delta.enableDeletionVectors': 'true'},
) }}

with

applied_versions as (
    -- the current version of every key this run applies (live or deleted)
    select * from {{ ref('int_key_versions') }}
    where is_current
),

current_versions as (
    select * from applied_versions
    where not is_deleted
    {% if not is_incremental() %}
        union all
        -- built whole: the live current rows of the keys this run does not apply (none on a
        -- first run or a full refresh, which start history empty: cdc_prepare_history), in
        -- the same columns (history's)
        select state.*
        from {{ source('cdc_state', 'history') }} as state
        left anti join applied_versions on state.key_id = applied_versions.key_id
        where state.is_current and not state.is_deleted
    {% endif %}
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
    -- the table's rows of the keys this run applies
    select merged.*
    from {{ this }} as merged
    left semi join applied_versions on merged.key_id = applied_versions.key_id
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
    -- applied keys the table holds that are no longer live (deleted, truncated, moved by a
    -- key change)
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
