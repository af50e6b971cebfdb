{#-
    The events of the keys this run applies (int_apply_keys; DESIGN.md §6, ADR 0008), one row
    per event, rewritten by every run: on the fast path the key's current version (BASE, from
    int_key_state) and its new events; for a rebuilt key all of its changes in change_log; and
    the table resets that apply to it. A key's events are numbered in change order (seq); its
    current version, a SET (INSERT, LOAD, the new key of a key change) or a REMOVE (DELETE, the
    old key of a key change, a table reset) starts a segment, an UPDATE (OVERLAY) continues it.
    Partitioned by is_key_change, so that int_history_versions reads the key changes' events
    alone cheaply, and bucketed by key_id (var cdc_apply_buckets), so that int_history_versions
    reads each key's events from one bucket and its windows shuffle nothing.
-#}

{{ config(
    materialized='table',
    partition_by=['is_key_change'],
    clustered_by=['key_id'],
    buckets=var('cdc_apply_buckets'),
) }}

with

logged_changes as (
    select * from {{ ref('int_changes_logged') }}
),

table_resets as (
    select * from {{ ref('int_table_resets') }}
),

classified as (
    select * from {{ ref('int_apply_keys') }}
),

new_changes as (
    select * from logged_changes
    where applied_generation > {{ cdc_state_watermark() }}
),

new_events as (
    {{ cdc_key_events('new_changes') }}
),

rebuilt_keys as (
    select key_id from classified
    where is_rebuilt
),

all_events as (
    -- every event on record: the rebuilt keys' are taken below
    {{ cdc_key_events('logged_changes') }}
),

row_events as (
    -- fast path: the new events of a key continued from its current version
    select new_events.*
    from new_events
    left semi join classified
        on
            new_events.key_id = classified.key_id
            and not classified.is_rebuilt
    union all
    -- rebuild: every event of the key
    select all_events.*
    from all_events
    left semi join rebuilt_keys on all_events.key_id = rebuilt_keys.key_id  -- a broadcast
),

key_loads as (
    -- the full loads that set a key: their reset does not apply to it (DESIGN.md §6.4)
    select distinct
        row_events.key_id,
        event.load_transaction
    from row_events
    where row_events.event.load_transaction is not null
),

reset_events as (
    -- a TRUNCATE applies to every key of its table; the reset of a full load to the keys the
    -- load does not set; on the fast path only resets after the key's last applied event
    select
        classified.feed,
        classified.source_schema,
        classified.source_table,
        classified.primary_key,
        classified.key_id,
        table_resets.event
    from classified
    inner join table_resets
        on
            classified.feed = table_resets.feed
            and classified.source_schema = table_resets.source_schema
            and classified.source_table = table_resets.source_table
    left anti join key_loads
        on
            classified.key_id = key_loads.key_id
            and table_resets.load_transaction = key_loads.load_transaction
    where
        classified.is_rebuilt
        or classified.previous_last_event_order is null
        or table_resets.reset_order > classified.previous_last_event_order
),

events as (
    -- the key's current version first (fast path), then its row events and resets
    select
        classified.feed,
        classified.source_schema,
        classified.source_table,
        classified.primary_key,
        classified.key_id,
        0 as event_class,
        classified.current_version.opened_order as event_order,
        0 as event_rank,
        'BASE' as kind,
        case when not classified.current_version.is_deleted then classified.current_version.row end as image,
        classified.current_version.opened_at as committed_at,
        classified.current_version.operation,
        classified.current_version as base_version,
        cast(null as string) as source_key_id,
        cast(null as array<string>) as table_columns
    from classified
    where not classified.is_rebuilt and classified.current_version is not null
    union all
    select
        row_events.feed,
        row_events.source_schema,
        row_events.source_table,
        row_events.primary_key,
        row_events.key_id,
        1 as event_class,
        row_events.event.event_order,
        row_events.event.event_rank,
        row_events.event.kind,
        row_events.event.image,
        row_events.event.committed_at,
        row_events.event.operation,
        cast(null as {{ cdc_version_type() }}) as base_version,
        row_events.event.source_key_id,
        row_events.event.table_columns
    from row_events
    union all
    select
        reset_events.feed,
        reset_events.source_schema,
        reset_events.source_table,
        reset_events.primary_key,
        reset_events.key_id,
        1 as event_class,
        reset_events.event.event_order,
        reset_events.event.event_rank,
        reset_events.event.kind,
        reset_events.event.image,
        reset_events.event.committed_at,
        reset_events.event.operation,
        cast(null as {{ cdc_version_type() }}) as base_version,
        cast(null as string) as source_key_id,
        cast(null as array<string>) as table_columns
    from reset_events
),

sequenced as (
    select
        *,
        row_number() over (
            partition by key_id
            order by event_class, event_order, event_rank, kind
        ) as seq,
        -- the event sets columns: an INSERT, LOAD or new key (SET), an UPDATE (OVERLAY), or a
        -- live current version (BASE)
        kind in ('SET', 'OVERLAY') or (kind = 'BASE' and image is not null) as sets_columns
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
        classified.previous_rebuilt_generation,
        classified.previous_version_count,
        live.source_key_id is not null or (live.kind = 'REMOVE' and live.operation = 'UPDATE') as is_key_change
    -- every event's key is in int_apply_keys: its keys are the new events', and the resets'
    -- events are taken from it
    from live
    inner join classified on live.key_id = classified.key_id
)

select * from final
