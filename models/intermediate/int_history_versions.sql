{#-
    The row versions this run computes, as partition history_generation = this run's
    generation (DESIGN.md §6, ADR 0008). Only keys touched since the last applied generation
    are recomputed:

    - keys with new changes in change_log, and every known key of a table with a new reset;
    - fast path: when every new event of a key sorts after the last event already applied to
      it, the new events are applied to its current version (from int_key_state), which is
      written again with its closing position;
    - rebuild: when a new event sorts before that (late delivery of an earlier position, a late
      TRUNCATE or full load), every version of the key is computed again from all of its
      changes in change_log; the history mart then ignores the key's rows of older generations.

    Set-based apply (ADR 0008): a key's events are numbered in change order; a SET (INSERT,
    LOAD, new key of a key change), a REMOVE (DELETE, old key of a key change, table reset) or
    the key's current version starts a segment, and an UPDATE (OVERLAY) continues it. The row
    after each event holds, for every column seen in its segment, the last value an event of the
    segment up to it carried (a window over a grid of events × columns). A version opens where
    the row changes. No lambda runs per event.

    A run killed before int_key_state is written leaves the watermark where it was, so the next
    run computes these keys again (and more) in its own generation; the history mart keeps the
    newest generation of each version.
-#}

{{ config(
    materialized='incremental',
    incremental_strategy='insert_overwrite',
    partition_by=['history_generation'],
) }}

{%- set generation = cdc_generation() -%}
{%- set watermark = cdc_state_watermark() -%}
{%- set previous_state = adapter.get_relation(database=this.database, schema=this.schema, identifier='int_key_state')
    if watermark != '' else none -%}

with

change_log as (
    select * from {{ ref('change_log') }}
),

table_resets as (
    select * from {{ ref('int_table_resets') }}
),

previous_state as (
    {% if previous_state is not none %}
        select * from {{ previous_state }}
    {% else %}
        select
            cast(null as string) as source_schema,
            cast(null as string) as source_table,
            cast(null as string) as primary_key,
            cast(null as {{ cdc_version_type() }}) as current_version,
            cast(null as struct<change_position: string, source_file: string, record_index: bigint>) as last_event_order,
            cast(null as string) as rebuilt_generation,
            cast(null as string) as state_generation,
            cast(null as string) as feed
        where false
    {% endif %}
),

new_changes as (
    select * from change_log
    where applied_generation > '{{ watermark }}'
),

new_events as (
    {{ cdc_key_events('new_changes') }}
),

key_first_new_events as (
    select
        new_events.feed,
        new_events.source_schema,
        new_events.source_table,
        new_events.primary_key,
        min(event.event_order) as first_event_order
    from new_events
    group by new_events.feed, new_events.source_schema, new_events.source_table, new_events.primary_key
),

table_first_new_resets as (
    select
        feed,
        source_schema,
        source_table,
        min(reset_order) as first_new_reset_order
    from table_resets
    where applied_generation > '{{ watermark }}'
    group by feed, source_schema, source_table
),

touched_keys as (
    select
        feed,
        source_schema,
        source_table,
        primary_key
    from key_first_new_events
    union
    select
        previous_state.feed,
        previous_state.source_schema,
        previous_state.source_table,
        previous_state.primary_key
    from previous_state
    inner join table_first_new_resets
        on
            previous_state.feed = table_first_new_resets.feed
            and previous_state.source_schema = table_first_new_resets.source_schema
            and previous_state.source_table = table_first_new_resets.source_table
),

first_classified as (
    select
        touched_keys.*,
        previous_state.primary_key is not null and (
            coalesce(key_first_new_events.first_event_order <= previous_state.last_event_order, false)
            or coalesce(table_first_new_resets.first_new_reset_order <= previous_state.last_event_order, false)
        ) as is_rebuilt
    from touched_keys
    left join key_first_new_events
        on
            touched_keys.feed = key_first_new_events.feed
            and touched_keys.source_schema = key_first_new_events.source_schema
            and touched_keys.source_table = key_first_new_events.source_table
            and touched_keys.primary_key = key_first_new_events.primary_key
    left join table_first_new_resets
        on
            touched_keys.feed = table_first_new_resets.feed
            and touched_keys.source_schema = table_first_new_resets.source_schema
            and touched_keys.source_table = table_first_new_resets.source_table
    left join previous_state
        on
            touched_keys.feed = previous_state.feed
            and touched_keys.source_schema = previous_state.source_schema
            and touched_keys.source_table = previous_state.source_table
            and touched_keys.primary_key = previous_state.primary_key
),

key_changes as (
    -- every key change on record (old key → new key): a rebuilt key takes the keys its row
    -- came from and went to along (its versions depend on theirs, ADR 0008)
    select distinct
        feed,
        source_schema,
        source_table,
        before_primary_key as old_key,
        primary_key as new_key
    from change_log
    where operation = 'UPDATE' and before_primary_key is not null and before_primary_key != primary_key
),

rebuilt_keys_0 as (
    select
        feed,
        source_schema,
        source_table,
        primary_key
    from first_classified
    where is_rebuilt
),

rebuilt_keys_1 as (
    select * from rebuilt_keys_0
    union
    select
        key_changes.feed,
        key_changes.source_schema,
        key_changes.source_table,
        case when key_changes.new_key = rebuilt_keys_0.primary_key then key_changes.old_key else key_changes.new_key end
            as primary_key
    from key_changes
    inner join rebuilt_keys_0
        on
            key_changes.feed = rebuilt_keys_0.feed
            and key_changes.source_schema = rebuilt_keys_0.source_schema
            and key_changes.source_table = rebuilt_keys_0.source_table
            and rebuilt_keys_0.primary_key in (key_changes.old_key, key_changes.new_key)
),

rebuilt_keys_2 as (
    select * from rebuilt_keys_1
    union
    select
        key_changes.feed,
        key_changes.source_schema,
        key_changes.source_table,
        case when key_changes.new_key = rebuilt_keys_1.primary_key then key_changes.old_key else key_changes.new_key end
            as primary_key
    from key_changes
    inner join rebuilt_keys_1
        on
            key_changes.feed = rebuilt_keys_1.feed
            and key_changes.source_schema = rebuilt_keys_1.source_schema
            and key_changes.source_table = rebuilt_keys_1.source_table
            and rebuilt_keys_1.primary_key in (key_changes.old_key, key_changes.new_key)
),

rebuilt_keys_3 as (
    select * from rebuilt_keys_2
    union
    select
        key_changes.feed,
        key_changes.source_schema,
        key_changes.source_table,
        case when key_changes.new_key = rebuilt_keys_2.primary_key then key_changes.old_key else key_changes.new_key end
            as primary_key
    from key_changes
    inner join rebuilt_keys_2
        on
            key_changes.feed = rebuilt_keys_2.feed
            and key_changes.source_schema = rebuilt_keys_2.source_schema
            and key_changes.source_table = rebuilt_keys_2.source_table
            and rebuilt_keys_2.primary_key in (key_changes.old_key, key_changes.new_key)
),

rebuilt_keys_4 as (
    select * from rebuilt_keys_3
    union
    select
        key_changes.feed,
        key_changes.source_schema,
        key_changes.source_table,
        case when key_changes.new_key = rebuilt_keys_3.primary_key then key_changes.old_key else key_changes.new_key end
            as primary_key
    from key_changes
    inner join rebuilt_keys_3
        on
            key_changes.feed = rebuilt_keys_3.feed
            and key_changes.source_schema = rebuilt_keys_3.source_schema
            and key_changes.source_table = rebuilt_keys_3.source_table
            and rebuilt_keys_3.primary_key in (key_changes.old_key, key_changes.new_key)
),

classified_keys as (
    select
        feed,
        source_schema,
        source_table,
        primary_key
    from first_classified
    union
    select
        feed,
        source_schema,
        source_table,
        primary_key
    from rebuilt_keys_4
),

classified as (
    select
        classified_keys.*,
        previous_state.current_version,
        previous_state.last_event_order as previous_last_event_order,
        previous_state.rebuilt_generation as previous_rebuilt_generation,
        rebuilt_keys_4.primary_key is not null as is_rebuilt
    from classified_keys
    left join rebuilt_keys_4
        on
            classified_keys.feed = rebuilt_keys_4.feed
            and classified_keys.source_schema = rebuilt_keys_4.source_schema
            and classified_keys.source_table = rebuilt_keys_4.source_table
            and classified_keys.primary_key = rebuilt_keys_4.primary_key
    left join previous_state
        on
            classified_keys.feed = previous_state.feed
            and classified_keys.source_schema = previous_state.source_schema
            and classified_keys.source_table = previous_state.source_table
            and classified_keys.primary_key = previous_state.primary_key
),

all_events as (
    {{ cdc_key_events('change_log') }}
),

row_events as (
    -- fast path: the new events of a key continued from its current version
    select new_events.*
    from new_events
    left semi join classified
        on
            new_events.feed = classified.feed
            and new_events.source_schema = classified.source_schema
            and new_events.source_table = classified.source_table
            and new_events.primary_key = classified.primary_key
            and not classified.is_rebuilt
    union all
    -- rebuild: every event of the key
    select all_events.*
    from all_events
    left semi join classified
        on
            all_events.feed = classified.feed
            and all_events.source_schema = classified.source_schema
            and all_events.source_table = classified.source_table
            and all_events.primary_key = classified.primary_key
            and classified.is_rebuilt
),

key_loads as (
    -- the full loads that set a key: their reset does not apply to it (DESIGN.md §6.4)
    select distinct
        row_events.feed,
        row_events.source_schema,
        row_events.source_table,
        row_events.primary_key,
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
        table_resets.event
    from classified
    inner join table_resets
        on
            classified.feed = table_resets.feed
            and classified.source_schema = table_resets.source_schema
            and classified.source_table = table_resets.source_table
    left anti join key_loads
        on
            classified.feed = key_loads.feed
            and classified.source_schema = key_loads.source_schema
            and classified.source_table = key_loads.source_table
            and classified.primary_key = key_loads.primary_key
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
        0 as event_class,
        classified.current_version.opened_order as event_order,
        0 as event_rank,
        'BASE' as kind,
        case when not classified.current_version.is_deleted then classified.current_version.row end as image,
        classified.current_version.opened_at as committed_at,
        classified.current_version.operation,
        classified.current_version as base_version,
        cast(null as string) as source_key
    from classified
    where not classified.is_rebuilt and classified.current_version is not null
    union all
    select
        row_events.feed,
        row_events.source_schema,
        row_events.source_table,
        row_events.primary_key,
        1 as event_class,
        row_events.event.event_order,
        row_events.event.event_rank,
        row_events.event.kind,
        row_events.event.image,
        row_events.event.committed_at,
        row_events.event.operation,
        cast(null as {{ cdc_version_type() }}) as base_version,
        row_events.event.source_key
    from row_events
    union all
    select
        reset_events.feed,
        reset_events.source_schema,
        reset_events.source_table,
        reset_events.primary_key,
        1 as event_class,
        reset_events.event.event_order,
        reset_events.event.event_rank,
        reset_events.event.kind,
        reset_events.event.image,
        reset_events.event.committed_at,
        reset_events.event.operation,
        cast(null as {{ cdc_version_type() }}) as base_version,
        cast(null as string) as source_key
    from reset_events
),

sequenced as (
    select
        *,
        row_number() over (
            partition by feed, source_schema, source_table, primary_key
            order by event_class, event_order, event_rank, kind
        ) as seq
    from events
),

segmented as (
    -- a segment starts at the current version, a SET or a REMOVE; an UPDATE continues it
    select
        *,
        sum(case when kind = 'OVERLAY' then 0 else 1 end) over (
            partition by feed, source_schema, source_table, primary_key
            order by seq rows between unbounded preceding and current row
        ) as segment,
        kind in ('SET', 'OVERLAY') or (kind = 'BASE' and image is not null) as sets_columns
    from sequenced
),

live as (
    -- the key has a row after the event: its segment started live, or an UPDATE followed
    select
        *,
        max(sets_columns) over (
            partition by feed, source_schema, source_table, primary_key, segment
            order by seq rows between unbounded preceding and current row
        ) as is_live
    from segmented
),

key_change_links as (
    -- the SET of a key change continues the old key's segment before the REMOVE of the same
    -- change: the row moves to the new key with every column it had (ADR 0008)
    select
        moved.feed,
        moved.source_schema,
        moved.source_table,
        moved.primary_key as child_key,
        moved.segment as child_segment,
        removed.primary_key as root_key,
        removed.segment - 1 as root_segment
    from live as moved
    inner join live as removed
        on
            moved.feed = removed.feed
            and moved.source_schema = removed.source_schema
            and moved.source_table = removed.source_table
            and moved.source_key = removed.primary_key
            and moved.event_order = removed.event_order
            and removed.kind = 'REMOVE'
            and removed.event_rank = 1
    where moved.source_key is not null and removed.segment > 1
),

lineage_0 as (
    select * from key_change_links
),

lineage_1 as (
    -- pointer jumping: after step i a segment knows its ancestor 2^i key changes back
    select
        child.feed,
        child.source_schema,
        child.source_table,
        child.child_key,
        child.child_segment,
        coalesce(parent.root_key, child.root_key) as root_key,
        coalesce(parent.root_segment, child.root_segment) as root_segment
    from lineage_0 as child
    left join lineage_0 as parent
        on
            child.feed = parent.feed
            and child.source_schema = parent.source_schema
            and child.source_table = parent.source_table
            and child.root_key = parent.child_key
            and child.root_segment = parent.child_segment
),

lineage_2 as (
    -- pointer jumping: after step i a segment knows its ancestor 2^i key changes back
    select
        child.feed,
        child.source_schema,
        child.source_table,
        child.child_key,
        child.child_segment,
        coalesce(parent.root_key, child.root_key) as root_key,
        coalesce(parent.root_segment, child.root_segment) as root_segment
    from lineage_1 as child
    left join lineage_1 as parent
        on
            child.feed = parent.feed
            and child.source_schema = parent.source_schema
            and child.source_table = parent.source_table
            and child.root_key = parent.child_key
            and child.root_segment = parent.child_segment
),

lineage_3 as (
    -- pointer jumping: after step i a segment knows its ancestor 2^i key changes back
    select
        child.feed,
        child.source_schema,
        child.source_table,
        child.child_key,
        child.child_segment,
        coalesce(parent.root_key, child.root_key) as root_key,
        coalesce(parent.root_segment, child.root_segment) as root_segment
    from lineage_2 as child
    left join lineage_2 as parent
        on
            child.feed = parent.feed
            and child.source_schema = parent.source_schema
            and child.source_table = parent.source_table
            and child.root_key = parent.child_key
            and child.root_segment = parent.child_segment
),

lineage_4 as (
    -- pointer jumping: after step i a segment knows its ancestor 2^i key changes back
    select
        child.feed,
        child.source_schema,
        child.source_table,
        child.child_key,
        child.child_segment,
        coalesce(parent.root_key, child.root_key) as root_key,
        coalesce(parent.root_segment, child.root_segment) as root_segment
    from lineage_3 as child
    left join lineage_3 as parent
        on
            child.feed = parent.feed
            and child.source_schema = parent.source_schema
            and child.source_table = parent.source_table
            and child.root_key = parent.child_key
            and child.root_segment = parent.child_segment
),

lineage_5 as (
    -- pointer jumping: after step i a segment knows its ancestor 2^i key changes back
    select
        child.feed,
        child.source_schema,
        child.source_table,
        child.child_key,
        child.child_segment,
        coalesce(parent.root_key, child.root_key) as root_key,
        coalesce(parent.root_segment, child.root_segment) as root_segment
    from lineage_4 as child
    left join lineage_4 as parent
        on
            child.feed = parent.feed
            and child.source_schema = parent.source_schema
            and child.source_table = parent.source_table
            and child.root_key = parent.child_key
            and child.root_segment = parent.child_segment
),

lineaged as (
    -- a row's lineage: the first segment of its chain of key changes (its own when none)
    select
        live.*,
        coalesce(lineage_5.root_key, live.primary_key) as lineage_key,
        coalesce(lineage_5.root_segment, live.segment) as lineage_segment
    from live
    left join lineage_5
        on
            live.feed = lineage_5.feed
            and live.source_schema = lineage_5.source_schema
            and live.source_table = lineage_5.source_table
            and live.primary_key = lineage_5.child_key
            and live.segment = lineage_5.child_segment
),

lineage_sequenced as (
    select
        *,
        row_number() over (
            partition by feed, source_schema, source_table, lineage_key, lineage_segment
            order by event_class, event_order, event_rank, kind, primary_key
        ) as lineage_seq
    from lineaged
),

image_entries as (
    select
        lineage_sequenced.feed,
        lineage_sequenced.source_schema,
        lineage_sequenced.source_table,
        lineage_sequenced.lineage_key,
        lineage_sequenced.lineage_segment,
        lineage_sequenced.lineage_seq,
        explode(lineage_sequenced.image) as (column_name, column_value)
    from lineage_sequenced
    where lineage_sequenced.sets_columns
),

lineage_columns as (
    select distinct
        feed,
        source_schema,
        source_table,
        lineage_key,
        lineage_segment,
        column_name
    from image_entries
),

column_grid as (
    -- every event × every column its lineage carries
    select
        lineage_sequenced.feed,
        lineage_sequenced.source_schema,
        lineage_sequenced.source_table,
        lineage_sequenced.lineage_key,
        lineage_sequenced.lineage_segment,
        lineage_sequenced.lineage_seq,
        lineage_columns.column_name
    from lineage_sequenced
    inner join lineage_columns
        on
            lineage_sequenced.feed = lineage_columns.feed
            and lineage_sequenced.source_schema = lineage_columns.source_schema
            and lineage_sequenced.source_table = lineage_columns.source_table
            and lineage_sequenced.lineage_key = lineage_columns.lineage_key
            and lineage_sequenced.lineage_segment = lineage_columns.lineage_segment
),

filled as (
    -- a column's value after an event: the last value an event of the lineage carried
    select
        column_grid.feed,
        column_grid.source_schema,
        column_grid.source_table,
        column_grid.lineage_key,
        column_grid.lineage_segment,
        column_grid.lineage_seq,
        column_grid.column_name,
        last(
            case when image_entries.lineage_seq is not null then named_struct('value', image_entries.column_value) end,
            true
        ) over (
            partition by
                column_grid.feed, column_grid.source_schema, column_grid.source_table,
                column_grid.lineage_key, column_grid.lineage_segment, column_grid.column_name
            order by column_grid.lineage_seq rows between unbounded preceding and current row
        ) as filled_value
    from column_grid
    left join image_entries
        on
            column_grid.feed = image_entries.feed
            and column_grid.source_schema = image_entries.source_schema
            and column_grid.source_table = image_entries.source_table
            and column_grid.lineage_key = image_entries.lineage_key
            and column_grid.lineage_segment = image_entries.lineage_segment
            and column_grid.lineage_seq = image_entries.lineage_seq
            and column_grid.column_name = image_entries.column_name
),

event_rows as (
    -- the row after each event, as entries sorted by column name (comparable with =)
    select
        filled.feed,
        filled.source_schema,
        filled.source_table,
        filled.lineage_key,
        filled.lineage_segment,
        filled.lineage_seq,
        sort_array(collect_list(named_struct('key', filled.column_name, 'value', filled.filled_value.value))) as entries
    from filled
    where filled.filled_value is not null
    group by
        filled.feed, filled.source_schema, filled.source_table,
        filled.lineage_key, filled.lineage_segment, filled.lineage_seq
),

stepped as (
    select
        lineage_sequenced.*,
        coalesce(event_rows.entries, cast(array() as array<struct<key: string, value: string>>)) as entries
    from lineage_sequenced
    left join event_rows
        on
            lineage_sequenced.feed = event_rows.feed
            and lineage_sequenced.source_schema = event_rows.source_schema
            and lineage_sequenced.source_table = event_rows.source_table
            and lineage_sequenced.lineage_key = event_rows.lineage_key
            and lineage_sequenced.lineage_segment = event_rows.lineage_segment
            and lineage_sequenced.lineage_seq = event_rows.lineage_seq
),

compared as (
    select
        *,
        case when is_live then map_from_entries(entries) end as row_after,
        coalesce(lag(is_live) over key_order, false) as was_live,
        lag(case when is_live then map_from_entries(entries) end) over key_order as row_before,
        lag(entries) over key_order as previous_entries
    from stepped
    window key_order as (partition by feed, source_schema, source_table, primary_key order by seq)
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
                partition by feed, source_schema, source_table, primary_key
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
        end as version
    from opened
    where opens_version
),

closed as (
    select
        *,
        lead(version) over (
            partition by feed, source_schema, source_table, primary_key order by seq
        ) as next_version
    from versions
),

key_last_events as (
    select
        feed,
        source_schema,
        source_table,
        primary_key,
        max(case when kind != 'BASE' then event_order end) as last_new_event_order
    from events
    group by feed, source_schema, source_table, primary_key
),

final as (
    select
        to_json(array(
            closed.feed, closed.source_schema, closed.source_table, closed.primary_key,
            closed.version.opened_order.change_position, closed.version.opened_order.source_file,
            lpad(cast(closed.version.opened_order.record_index as string), 12, '0')
        )) as version_id,
        closed.source_schema,
        closed.source_table,
        closed.primary_key,
        closed.version,
        closed.version.opened_order.change_position as valid_from_position,
        closed.version.opened_at as valid_from,
        closed.next_version.opened_order.change_position as valid_to_position,
        closed.next_version.opened_at as valid_to,
        closed.next_version.operation as closed_by_operation,
        closed.next_version is null as is_current,
        classified.is_rebuilt,
        case
            when classified.is_rebuilt or classified.previous_rebuilt_generation is null then '{{ generation }}'
            else classified.previous_rebuilt_generation
        end as rebuilt_generation,
        greatest(
            case when not classified.is_rebuilt then classified.previous_last_event_order end,
            key_last_events.last_new_event_order
        ) as last_event_order,
        closed.feed,
        '{{ generation }}' as history_generation
    from closed
    inner join classified
        on
            closed.feed = classified.feed
            and closed.source_schema = classified.source_schema
            and closed.source_table = classified.source_table
            and closed.primary_key = classified.primary_key
    inner join key_last_events
        on
            closed.feed = key_last_events.feed
            and closed.source_schema = key_last_events.source_schema
            and closed.source_table = key_last_events.source_table
            and closed.primary_key = key_last_events.primary_key
)

select * from final
