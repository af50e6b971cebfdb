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
        to_json(array_sort(map_entries(row))) as row_text
    from {{ ref('history') }}
    where is_current and not is_deleted and {{ cdc_touched_keys_predicate() }}
),

current_rows as (
    select
        feed,
        source_schema,
        source_table,
        primary_key,
        to_json(array_sort(map_entries(row))) as row_text
    from {{ ref('current_state') }}
    where {{ cdc_touched_keys_predicate() }}
),

differences as (
    (select
        'only in history' as side,
        *
    from current_versions
    except
    select
        'only in history' as side,
        *
    from current_rows)
    union all
    (select
        'only in current_state' as side,
        *
    from current_rows
    except
    select
        'only in current_state' as side,
        *
    from current_versions)
)

select * from differences
