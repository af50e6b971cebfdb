{#-
    The versions this run computes for the keys it applies (DESIGN.md §6, ADR 0030, ADR 0038),
    one row per version in the history mart's columns, from the events of int_apply_events: on
    the fast path the key's current version (written again, now closed if a new version
    follows) and its new versions; for a rebuilt key every version it has. The history mart
    merges them; the current row of each key also carries the order of the last event applied
    to it (last_event_order), which the next run reads back as its state.

    Set-based: from the row after each event (int_event_rows), a version opens where the row
    of a key changes, every window over one key's events in change order (seq).
-#}

with

event_rows as (
    select * from {{ ref('int_event_rows') }}
),

compared as (
    select
        *,
        case when is_live then map_from_entries(entries) end as row_after,
        coalesce(lag(is_live) over key_order, false) as was_live,
        lag(case when is_live then map_from_entries(entries) end) over key_order as row_before,
        lag(entries) over key_order as previous_entries,
        -- the key's last new event (its other figures are the same on each of its rows): a
        -- window over the partition the windows above use, not an aggregate joined back
        max(case when kind != 'BASE' then event_order end) over (partition by key_id) as last_new_event_order
    from event_rows
    window key_order as (partition by key_id order by seq)
),

flagged as (
    select
        *,
        case
            when kind = 'BASE' then true
            -- SET and UPDATE open a version when the row changes
            when kind in ('SET', 'OVERLAY') then not (was_live and previous_entries = entries)
            -- REMOVE opens a deleted version that keeps the last values of a live row
            else was_live
        end as opens_changed_version,
        -- a DELETE of a key never seen keeps its before image on record (first event only)
        kind = 'REMOVE' and not was_live and image is not null as is_unseen_delete
    from compared
),

opened as (
    select
        *,
        opens_changed_version or (
            is_unseen_delete
            and coalesce(sum(case when opens_changed_version or is_unseen_delete then 1 else 0 end) over (
                partition by key_id
                order by seq rows between unbounded preceding and 1 preceding
            ), 0) = 0
        ) as opens_version
    from flagged
),

versions as (
    select
        feed,
        source_schema,
        source_table,
        primary_key,
        key_id,
        seq,
        case
            when kind = 'BASE' then base_version
            else named_struct(
                'opened_order', event_order,
                'opened_at', committed_at,
                'operation', operation,
                'row', case when kind = 'REMOVE' then coalesce(row_before, image) else row_after end,
                'is_deleted', kind = 'REMOVE'
            )
        end as version,
        last_new_event_order,
        is_rebuilt,
        previous_last_event_order
    from opened
    where opens_version
),

closed as (
    select
        *,
        lead(version) over (partition by key_id order by seq) as next_version
    from versions
),

final as (
    select
        to_json(array(
            closed.feed, closed.source_schema, closed.source_table, closed.primary_key,
            closed.version.opened_order.change_position, closed.version.opened_order.source_file,
            lpad(cast(closed.version.opened_order.record_index as string), 12, '0')
        )) as version_id,
        closed.feed,
        closed.source_schema,
        closed.source_table,
        closed.primary_key,
        closed.key_id,
        closed.version.row,
        closed.version.operation as opened_by_operation,
        closed.version.opened_order.change_position as valid_from_position,
        closed.version.opened_at as valid_from,
        closed.next_version.operation as closed_by_operation,
        closed.next_version.opened_order.change_position as valid_to_position,
        closed.next_version.opened_at as valid_to,
        closed.next_version is null as is_current,
        closed.version.is_deleted,
        closed.version.opened_order,
        -- on the current version only: the key's last event applied (a new one, or on the
        -- fast path the one the previous run applied last, when every new event sorts after)
        case when closed.next_version is null then greatest(
            case when not closed.is_rebuilt then closed.previous_last_event_order end,
            closed.last_new_event_order
        ) end as last_event_order,
        '{{ cdc_generation() }}' as history_generation,
        {{ cdc_table_key_sql('closed.feed', 'closed.source_schema', 'closed.source_table') }} as table_key
    from closed
)

select * from final
