{{ config(tags=['cdc_self_check']) }}

{#-
    History replayed to its last version is current state: the current, not deleted versions
    are exactly the rows of current_state, with the same values. Checks the keys the last run
    touched; var cdc_test_scope: all checks every key.
    A self-check (tag cdc_self_check): it fails only on a defect of this project or a damaged
    lake, so a data-only `cdc run` leaves it out (ADR 0015).
-#}

with

current_versions as (
    select
        feed,
        source_schema,
        source_table,
        primary_key,
        key_id,
        to_json(array_sort(map_entries(row))) as row_text
    from {{ ref('history') }}
    where is_current and not is_deleted and {{ cdc_touched_keys_predicate(ref('history')) }}
),

current_rows as (
    select
        feed,
        source_schema,
        source_table,
        primary_key,
        key_id,
        to_json(array_sort(map_entries(row))) as row_text
    from {{ ref('current_state') }}
    where {{ cdc_touched_keys_predicate(ref('history')) }}
),

differences as (
    -- a full outer join on the key reads each side once (two EXCEPTs read each twice, the
    -- history view's join and window included); a key and its row either side is one
    -- version, since each side holds a key once (history_versions_chain_per_key, unique
    -- current_state_id), so a difference is the same one EXCEPT would find
    select
        current_versions.feed as history_feed,
        current_versions.source_schema as history_source_schema,
        current_versions.source_table as history_source_table,
        current_versions.primary_key as history_primary_key,
        current_versions.row_text as history_row_text,
        current_rows.feed as current_state_feed,
        current_rows.source_schema as current_state_source_schema,
        current_rows.source_table as current_state_source_table,
        current_rows.primary_key as current_state_primary_key,
        current_rows.row_text as current_state_row_text
    from current_versions
    full outer join current_rows
        on current_versions.key_id <=> current_rows.key_id
    where current_versions.row_text is distinct from current_rows.row_text
)

select
    case
        when current_state_row_text is null then 'only in history'
        when history_row_text is null then 'only in current_state'
        else 'different rows'
    end as side,
    *
from differences
