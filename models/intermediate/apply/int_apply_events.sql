{#-
    The events of the keys this run applies (int_apply_events_gathered; DESIGN.md §6, ADR
    0030), one row per event, rewritten by every run: on the fast path the key's current
    version and its new events, for a rebuilt key all its changes, and the table resets that
    apply to it. A key's events are numbered in change order (seq); its
    current version, a SET (INSERT, LOAD, the new key of a key change) or a REMOVE (DELETE, the
    old key of a key change, a table reset) starts a segment, an UPDATE (OVERLAY) continues it.
    Partitioned by is_key_change, so that int_key_change_rows reads the key changes' events
    alone cheaply. A Delta table, which has no buckets (ADR 0038): int_event_rows' windows
    shuffle the run's events by key.
-#}

{{ config(
    materialized='table',
    partition_by=['is_key_change'],
) }}

with

events as (
    select * from {{ ref('int_apply_events_gathered') }}
),

classified as (
    select * from {{ ref('int_apply_keys') }}
),

sequenced as (
    select
        events.feed,
        events.source_schema,
        events.source_table,
        events.primary_key,
        events.key_id,
        events.event_class,
        events.base_version,
        events.event.*,
        row_number() over (
            partition by events.key_id
            order by events.event_class, events.event.event_order, events.event.event_rank, events.event.kind
        ) as seq,
        -- the event sets columns: an INSERT, LOAD or new key (SET), an UPDATE (OVERLAY), or a
        -- live current version (BASE)
        events.event.kind in ('SET', 'OVERLAY') or (events.event.kind = 'BASE' and events.event.image is not null)
            as sets_columns
    from events
),

segmented as (
    -- a segment starts at the current version, a SET or a REMOVE; an UPDATE continues it.
    -- Every window here has the order of seq's (not seq itself, which Spark would sort the
    -- events by again): one sort of the events serves them all
    select
        *,
        sum(case when kind = 'OVERLAY' then 0 else 1 end) over key_events as segment,
        -- the event that started the segment (null in a key's leading UPDATEs, segment 0) and
        -- the last event up to this one that set columns
        max(case when kind != 'OVERLAY' then seq end) over key_events as segment_start_seq,
        max(case when sets_columns then seq end) over key_events as last_setting_seq
    from sequenced
    window key_events as (
        partition by key_id
        order by event_class, event_order, event_rank, kind
        rows between unbounded preceding and current row
    )
),

live as (
    -- the key has a row after the event: an event of its segment up to it set columns (its
    -- segment started live, or an UPDATE followed): a window over the key, not over the key
    -- and segment, which would sort the events once more
    select
        *,
        last_setting_seq is not null
        and (segment_start_seq is null or last_setting_seq >= segment_start_seq) as is_live
    from segmented
),

final as (
    select
        live.feed,
        live.source_schema,
        live.source_table,
        live.primary_key,
        live.key_id,
        live.seq,
        live.segment,
        live.event_class,
        live.event_order,
        live.event_rank,
        live.kind,
        live.image,
        live.committed_at,
        live.operation,
        live.base_version,
        live.source_key_id,
        live.table_columns,
        live.sets_columns,
        live.is_live,
        classified.is_rebuilt,
        classified.previous_last_event_order,
        live.source_key_id is not null or (live.kind = 'REMOVE' and live.operation = 'UPDATE') as is_key_change
    -- every event's key is in int_apply_keys: its keys are the new events', and the resets'
    -- events are taken from it
    from live
    inner join classified on live.key_id = classified.key_id
)

select * from final
