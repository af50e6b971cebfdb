{{ config(tags=['cdc_self_check']) }}

{#-
    Independent check of current state (DESIGN.md §6): a key is live when its last event is an
    INSERT, UPDATE or LOAD that does not sort before the table's last reset (a TRUNCATE, or the
    first row of a full load: the LOAD rows of one table and transaction); a DELETE, or an UPDATE
    that moved the row to another key, ends it. Every live key is in current state, no other.
    Checks the keys the last run touched; var cdc_test_scope: all checks every key.
    A self-check (tag cdc_self_check): it fails only on a defect of this project or a damaged
    lake, so a data-only `cdc run` leaves it out (ADR 0015).
-#}

with

change_log as (
    select * from {{ ref('change_log') }}
),

current_state as (
    select * from {{ ref('current_state') }}
    where {{ cdc_touched_keys_predicate(ref('history')) }}
),

table_resets as (
    select
        feed,
        source_schema,
        source_table,
        max(reset_order) as last_reset_order
    from (
        select feed, source_schema, source_table, {{ cdc_change_order() }} as reset_order
        from change_log
        where operation = 'TRUNCATE'
        union all
        select feed, source_schema, source_table, min({{ cdc_change_order() }}) as reset_order
        from change_log
        where operation = 'LOAD'
        group by feed, source_schema, source_table, transaction_id
    ) as resets
    group by feed, source_schema, source_table
),

key_events as (
    select
        feed,
        source_schema,
        source_table,
        primary_key,
        key_id,
        operation = 'DELETE' as ends_row,
        {{ cdc_change_order() }} as event_order
    from change_log
    where primary_key is not null and operation in ('INSERT', 'UPDATE', 'DELETE', 'LOAD')
    union all
    select
        feed,
        source_schema,
        source_table,
        before_primary_key as primary_key,
        before_key_id as key_id,
        true as ends_row,
        {{ cdc_change_order() }} as event_order
    from change_log
    where operation = 'UPDATE' and before_primary_key != primary_key
),

last_events as (
    select
        feed,
        source_schema,
        source_table,
        primary_key,
        key_id,
        max_by(ends_row, event_order) as last_ends_row,
        max(event_order) as last_order
    from key_events
    where {{ cdc_touched_keys_predicate(ref('history')) }}
    group by key_id, feed, source_schema, source_table, primary_key
),

expectations as (
    select
        last_events.*,
        not last_events.last_ends_row
        and (
            table_resets.last_reset_order is null
            or last_events.last_order >= table_resets.last_reset_order
        ) as is_expected_live
    from last_events
    left join table_resets
        on
            last_events.feed = table_resets.feed
            and last_events.source_schema = table_resets.source_schema
            and last_events.source_table = table_resets.source_table
),

mismatches as (
    select
        expectations.feed,
        expectations.source_schema,
        expectations.source_table,
        expectations.primary_key,
        expectations.last_ends_row,
        expectations.is_expected_live,
        current_state.primary_key is not null as is_live
    from expectations
    left join current_state on expectations.key_id = current_state.key_id
)

select * from mismatches
where is_expected_live != is_live
