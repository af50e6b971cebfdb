{#-
    SCD type 2 history of every catalog table (long form, DESIGN.md §6.6): one row per version
    of a key, valid from the commit time of the change that opened it until the commit time
    of the next one. A DELETE, a key change, a TRUNCATE or the start of a full load opens a
    deleted version (is_deleted, keeping the last values).

    A Delta table (ADR 0038) that each run updates by one MERGE on version_id, from the
    versions it computed for the keys it applies (int_key_versions): a version that is new or
    differs from the table's is written, the current version of every key applied is written
    (its last_event_order and history_generation move on), and a rebuilt key's versions that
    the rebuild no longer opens are deleted. Every other row stays, so the table's Change Data
    Feed holds what the run changed. The next run reads the current rows back as its state
    (source cdc_state.history); its newest history_generation is the watermark. It merges
    after current_state (an ordering, read nothing from it), so the state moves last: a run
    killed between the two MERGEs leaves the watermark where it was.
-#}

-- depends_on: {{ ref('int_apply_events') }}
-- depends_on: {{ ref('current_state') }}

{{ config(
    materialized='incremental',
    incremental_strategy='merge',
    unique_key='version_id',
    cdc_delete_column='cdc_is_removed',
    partition_by=['feed', 'table_key'],
    tblproperties={'delta.enableChangeDataFeed': 'true', 'delta.enableDeletionVectors': 'true'},
) }}

with

key_versions as (
    select * from {{ ref('int_key_versions') }}
),

{% if is_incremental() %}
rebuilt_keys as (
    select distinct key_id from {{ ref('int_apply_events') }}
    where is_rebuilt
),

merged as (
    -- the table's rows of the keys this run applies
    select merged.*
    from {{ this }} as merged
    left semi join (
        select key_id from key_versions
        union
        select key_id from rebuilt_keys
    ) as applied_keys
        on merged.key_id = applied_keys.key_id
),

written_versions as (
    -- versions the table lacks or holds otherwise, and every current version (the row is
    -- compared as its sorted entries: maps have no equality)
    select
        key_versions.*,
        false as cdc_is_removed
    from key_versions
    left anti join merged
        on
            key_versions.version_id = merged.version_id
            and not key_versions.is_current
            and array_sort(map_entries(key_versions.row)) <=> array_sort(map_entries(merged.row))
            and key_versions.opened_by_operation <=> merged.opened_by_operation
            and key_versions.valid_from <=> merged.valid_from
            and key_versions.closed_by_operation <=> merged.closed_by_operation
            and key_versions.valid_to_position <=> merged.valid_to_position
            and key_versions.valid_to <=> merged.valid_to
            and key_versions.is_deleted <=> merged.is_deleted
            and not merged.is_current
),

removed_versions as (
    -- a rebuilt key's versions that its rebuild no longer opens
    select
        merged.*,
        true as cdc_is_removed
    from merged
    left semi join rebuilt_keys on merged.key_id = rebuilt_keys.key_id
    left anti join key_versions on merged.version_id = key_versions.version_id
),

final as (
    select * from written_versions
    union all
    select * from removed_versions
)
{% else %}
    final as (
        select * from key_versions
    )
{% endif %}

select * from final
