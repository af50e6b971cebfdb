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
applied_keys as (
    -- every key of the run's events, and whether a late change rebuilds it (a set read from
    -- a table, so that int_key_versions is read once, in compared)
    select
        key_id,
        max(is_rebuilt) as is_rebuilt
    from {{ ref('int_apply_events') }}
    group by key_id
),

merged as (
    -- the table's rows of those keys, each whole as a struct of the table's columns
    select
        struct(merged.*) as held,
        merged.version_id,
        applied_keys.is_rebuilt
    from {{ this }} as merged
    inner join applied_keys on merged.key_id = applied_keys.key_id
),

compared as (
    -- each version computed beside the table's row of the same version_id; unchanged: a
    -- version the table holds as it is, neither of the two current (the row is compared as
    -- its sorted entries: maps have no equality)
    select
        struct(key_versions.*) as computed,
        merged.held,
        key_versions.version_id is not null as is_computed,
        coalesce(merged.is_rebuilt, false) as is_rebuilt,
        coalesce(
            merged.version_id is not null
            and not key_versions.is_current
            and not merged.held.is_current
            and array_sort(map_entries(key_versions.row)) <=> array_sort(map_entries(merged.held.row))
            and key_versions.opened_by_operation <=> merged.held.opened_by_operation
            and key_versions.valid_from <=> merged.held.valid_from
            and key_versions.closed_by_operation <=> merged.held.closed_by_operation
            and key_versions.valid_to_position <=> merged.held.valid_to_position
            and key_versions.valid_to <=> merged.held.valid_to
            and key_versions.is_deleted <=> merged.held.is_deleted,
            false
        ) as is_unchanged
    from key_versions
    full outer join merged on key_versions.version_id = merged.version_id
),

chosen as (
    -- versions the table lacks or holds otherwise, and every current version, are written; a
    -- rebuilt key's versions that its rebuild no longer opens are deleted (cdc_is_removed)
    select
        case when is_computed then computed else held end as version,
        not is_computed as cdc_is_removed
    from compared
    where (is_computed and not is_unchanged) or (not is_computed and is_rebuilt)
),

final as (
    select
        version.*,
        cdc_is_removed
    from chosen
)
{% else %}
    final as (
        select * from key_versions
    )
{% endif %}

select * from final
