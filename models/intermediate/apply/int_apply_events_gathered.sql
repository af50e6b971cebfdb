{#-
    The events of the keys this run applies (int_apply_keys; DESIGN.md §6, ADR 0030), not yet
    ordered, all as one event struct (cdc_key_events): on the fast path the key's current
    version (BASE, event_class 0, from the previous state) and its new events; for a rebuilt
    key all of its changes in change_log; and the table resets that apply to it.
-#}

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
    -- the key's current version first (fast path), then its row events and resets, all as one
    -- event struct (cdc_key_events)
    select
        classified.feed,
        classified.source_schema,
        classified.source_table,
        classified.primary_key,
        classified.key_id,
        named_struct(
            'event_order', classified.current_version.opened_order,
            'event_rank', 0,
            'kind', 'BASE',
            'image', case when not classified.current_version.is_deleted then classified.current_version.row end,
            'committed_at', classified.current_version.opened_at,
            'operation', classified.current_version.operation,
            'load_transaction', cast(null as string),
            'table_columns', cast(null as array<string>),
            'source_key_id', cast(null as string)
        ) as event,
        0 as event_class,
        classified.current_version as base_version
    from classified
    where not classified.is_rebuilt and classified.current_version is not null
    union all
    select
        row_and_reset_events.*,
        1 as event_class,
        cast(null as {{ cdc_version_type() }}) as base_version
    from (
        select * from row_events
        union all
        select * from reset_events
    ) as row_and_reset_events
)

select * from events
