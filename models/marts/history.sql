{#-
    SCD type 2 history of every catalog table (long form, DESIGN.md §6.6): one row per version
    of a key, valid from the commit time of the change that opened it until the commit time
    of the next one. A DELETE, a key change, a TRUNCATE or the start of a full load opens a
    deleted version (is_deleted, keeping the last values). Built from int_history_versions:
    the newest generation of each version, ignoring generations older than the key's last
    rebuild.
-#}

{{ config(materialized='view') }}

with

versions as (
    select * from {{ ref('int_history_versions') }}
),

key_state as (
    select * from {{ ref('int_key_state') }}
),

valid_versions as (
    select versions.*
    from versions
    inner join key_state on versions.key_id = key_state.key_id
    where versions.history_generation >= key_state.rebuilt_generation
),

newest_versions as (
    select
        *,
        row_number() over (
            -- a version_id names its key: partitioning by key_id as well lets a filter on the
            -- key (the scoped data tests) reach the version store
            partition by key_id, version_id
            order by history_generation desc
        ) as generation_rank
    from valid_versions
),

final as (
    select
        newest_versions.version_id,
        newest_versions.feed,
        newest_versions.source_schema,
        newest_versions.source_table,
        newest_versions.primary_key,
        newest_versions.key_id,
        version.row,
        version.operation as opened_by_operation,
        newest_versions.valid_from_position,
        newest_versions.valid_from,
        newest_versions.closed_by_operation,
        newest_versions.valid_to_position,
        newest_versions.valid_to,
        newest_versions.is_current,
        version.is_deleted
    from newest_versions
    where newest_versions.generation_rank = 1
)

select * from final
