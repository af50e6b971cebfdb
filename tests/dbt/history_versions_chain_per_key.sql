{{ config(tags=['cdc_self_check']) }}

{#-
    History has no gaps and no overlaps (DESIGN.md §6.6): per key, ordered by the position that
    opened them, each version is closed exactly by the next one (valid_to_position and
    valid_to equal the next valid_from_position and valid_from), only the last is current and
    open, and a key has exactly one current version.
    Checks the keys the last run touched; var cdc_test_scope: all checks every key.
    A self-check (tag cdc_self_check): it fails only on a defect of this project or a damaged
    lake, so a data-only `cdc run` leaves it out (ADR 0015).
-#}

with

history as (
    select * from {{ ref('history') }}
    where {{ cdc_touched_keys_predicate(ref('history')) }}
),

ordered as (
    select
        *,
        lead(valid_from_position) over key_versions as next_valid_from_position,
        lead(valid_from) over key_versions as next_valid_from,
        count(case when is_current then 1 end) over (partition by key_id) as current_versions
    from history
    window key_versions as (
        partition by key_id
        order by valid_from_position, version_id
    )
)

select * from ordered
where
    current_versions != 1
    or (next_valid_from_position is null) != is_current
    or (is_current and (valid_to_position is not null or valid_to is not null))
    or (not is_current and (
        valid_to_position != next_valid_from_position
        or valid_to != next_valid_from
        or valid_to_position < valid_from_position
    ))
