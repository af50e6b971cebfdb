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

-- depends_on: {{ ref('int_apply_events') }}

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

versions as (
    -- in this table's columns, with is_deleted
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
        table_key,
        is_deleted
    from current_versions
),

{% if is_incremental() %}
merged as (
    -- the table's rows of the keys this run may apply (every key of its events: a set read
    -- from a table, so that int_key_versions is read once, in versions)
    select merged.*
    from {{ this }} as merged
    left semi join {{ ref('int_apply_events') }} as applied_events
        on merged.key_id = applied_events.key_id
),

compared as (
    -- each applied key's current version beside the table's row of the key (one row per key:
    -- key_id stands for current_state_id); the row is compared as its sorted entries (maps
    -- have no equality)
    select
        versions.*,
        merged.key_id is not null as is_held,
        coalesce(
            merged.key_id is not null
            and versions.last_change_position <=> merged.last_change_position
            and versions.last_operation <=> merged.last_operation
            and versions.last_committed_at <=> merged.last_committed_at
            and array_sort(map_entries(versions.row)) = array_sort(map_entries(merged.row)),
            false
        ) as is_unchanged
    from versions
    left join merged on versions.key_id = merged.key_id
),

final as (
    -- live keys the table lacks or holds with another version are upserted; keys no longer
    -- live (deleted, truncated, moved by a key change) that it holds are deleted, matched on
    -- current_state_id (cdc_is_removed)
    select
        * except (is_deleted, is_held, is_unchanged),
        is_deleted as cdc_is_removed
    from compared
    where (not is_deleted and not is_unchanged) or (is_deleted and is_held)
)
{% else %}
    final as (
        select * except (is_deleted) from versions
        where not is_deleted
    )
{% endif %}

select * from final
