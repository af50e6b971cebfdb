{#-
    The row versions this run computes, as partition history_generation = this run's
    generation (DESIGN.md §6, ADR 0008), from the events of the keys it applies
    (int_apply_events: the fast path continues a key from its current version, a rebuild
    recomputes all its versions; the history mart then ignores the key's rows of older
    generations).

    Set-based, every window over one key's events in change order (seq): the row after each
    event holds, for every column, the last value an image of its segment carried up to it.
    A key change carries the old key's row to the new key (ADR 0026): the SET of the new key
    is laid over the row the old key's segment ended with, found for the few key changes of
    the run by a recursive CTE along each chain. A version opens where the row changes.

    A run killed before int_key_state is written leaves the watermark where it was, so the next
    run computes these keys again (and more) in its own generation; the history mart keeps the
    newest generation of each version.
-#}

{{ config(
    materialized='incremental',
    incremental_strategy='insert_overwrite',
    on_schema_change='fail',
    partition_by=['history_generation'],
) }}

{%- set generation = cdc_generation() %}

with recursive

apply_events as (
    select * from {{ ref('int_apply_events') }}
),

key_change_links as (
    -- a key change: the SET of the new key (child) continues the segment the old key (parent)
    -- had before the REMOVE of the same change. Reads the is_key_change partition only
    select
        moved.key_id as child_key_id,
        moved.segment as child_segment,
        removed.key_id as parent_key_id,
        removed.segment - 1 as parent_segment
    from apply_events as moved
    inner join apply_events as removed
        on
            moved.source_key_id = removed.key_id
            and moved.event_order = removed.event_order
    where
        moved.is_key_change
        and removed.is_key_change
        and moved.source_key_id is not null
        and removed.kind = 'REMOVE'
        and removed.segment > 1
),

parent_entries as (
    -- the column values of the parents' segments (a broadcast of few segments)
    select /*+ broadcast(key_change_links) */
        apply_events.key_id,
        apply_events.segment,
        apply_events.seq,
        explode(map_entries(apply_events.image)) as entry
    from apply_events
    left semi join key_change_links
        on
            apply_events.key_id = key_change_links.parent_key_id
            and apply_events.segment = key_change_links.parent_segment
    where apply_events.sets_columns
),

parent_rows as (
    -- the row a parent segment ends with: each column's last value in the segment
    select
        key_id,
        segment,
        map_from_entries(collect_list(named_struct('key', column_name, 'value', column_value))) as row
    from (
        select
            parent_entries.key_id,
            parent_entries.segment,
            parent_entries.entry.key as column_name,
            max_by(parent_entries.entry.value, parent_entries.seq) as column_value
        from parent_entries
        group by parent_entries.key_id, parent_entries.segment, parent_entries.entry.key
    ) as parent_columns
    group by key_id, segment
),

carried_rows (child_key_id, child_segment, row) as (
    -- the row each key change carries: the parent segment's row, laid over the row an earlier
    -- key change carried into that segment (each chain followed from its first key). A chain of
    -- more than 100 key changes (spark.sql.cteRecursionLevelLimit) stops the run with Spark's
    -- error
    select
        links.child_key_id,
        links.child_segment,
        coalesce(parent_rows.row, cast(map() as map<string, string>)) as row  -- noqa: LT01
    from key_change_links as links
    left join parent_rows
        on links.parent_key_id = parent_rows.key_id and links.parent_segment = parent_rows.segment
    left anti join key_change_links as earlier
        on links.parent_key_id = earlier.child_key_id and links.parent_segment = earlier.child_segment
    union all
    select
        links.child_key_id,
        links.child_segment,
        {{ cdc_overlay('carried_rows.row', "coalesce(parent_rows.row, cast(map() as map<string, string>))") }}
            as row
    from carried_rows
    inner join key_change_links as links
        on carried_rows.child_key_id = links.parent_key_id and carried_rows.child_segment = links.parent_segment
    left join parent_rows
        on links.parent_key_id = parent_rows.key_id and links.parent_segment = parent_rows.segment
),

carried as (
    -- LIMIT ALL lifts Spark's cap on the rows a recursive CTE returns (a million)
    select * from carried_rows limit all  -- noqa: AM09
),

events as (
    -- the SET of a key change's new key laid over the row it carries (a broadcast: no shuffle)
    select /*+ broadcast(carried) */
        apply_events.* except (image),
        case
            when carried.row is not null then {{ cdc_overlay('carried.row', 'apply_events.image') }}
            else apply_events.image
        end as image
    from apply_events
    left join carried
        on
            apply_events.key_id = carried.child_key_id
            and apply_events.segment = carried.child_segment
            and apply_events.kind = 'SET'
            and apply_events.source_key_id is not null
),

key_sequenced as (
    -- every window here partitions by the key and orders by seq: int_apply_events is bucketed by
    -- key_id, so none shuffles, and one sort serves them all (ADR 0008)
    select
        *,
        -- uniform: every image of the key carries the same columns (full images, the common
        -- case), so the row after an event is the last image of its segment
        coalesce(
            min(case when sets_columns then sort_array(map_keys(image)) end) over key_whole
            = max(case when sets_columns then sort_array(map_keys(image)) end) over key_whole,
            true
        ) as is_uniform,
        last(
            case when sets_columns then named_struct('segment', segment, 'image', image) end, true
        ) over key_upto as last_image,
        -- every column an image of the key carries
        array_distinct(flatten(collect_list(case when sets_columns then map_keys(image) end) over key_whole))
            as column_names
    from events
    window
        key_upto as (partition by key_id order by seq rows between unbounded preceding and current row),
        key_whole as (partition by key_id order by seq rows between unbounded preceding and unbounded following)
),

column_filled as (
    -- of a key whose images carry different column sets (compressed images), one row per event
    -- and column, with the last value an image of the key carried for the column up to the
    -- event and the segment it came from (a struct keeps an explicit NULL apart from an absent
    -- column); of a uniform key, the event alone (column_name null)
    select
        *,
        last(
            case
                when not is_uniform and sets_columns and map_contains_key(image, column_name)
                    then named_struct('segment', segment, 'value', image[column_name])
            end,
            true
        ) over (
            partition by key_id, column_name
            order by seq rows between unbounded preceding and current row
        ) as filled
    from key_sequenced
        lateral view posexplode(case when is_uniform then array(cast(null as string)) else column_names end)
        as column_position, column_name
),

column_gathered as (
    -- the columns whose last value came from the event's segment, gathered onto its first row
    select
        *,
        sort_array(collect_list(
            case
                when filled['segment'] = segment
                    then named_struct('key', column_name, 'value', filled['value'])
            end
        ) over (partition by key_id, seq)) as gathered_entries
    from column_filled
),

stepped as (
    -- the row after each event, as entries sorted by column name (comparable with =): of a
    -- uniform key, the last image of its segment up to it (none: no row); of a key whose
    -- images differ, the columns whose last value came from its segment (ADR 0008)
    select
        * except (last_image, column_names, column_position, column_name, filled, gathered_entries),
        case
            when is_uniform
                then coalesce(
                    sort_array(map_entries(case when last_image['segment'] = segment then last_image['image'] end)),
                    cast(array() as array<struct<key: string, value: string>>)
                )
            -- a column outside the event's table_columns was dropped at the source (ADR 0024)
            else filter(gathered_entries, e -> table_columns is null or array_contains(table_columns, e.key))
        end as entries
    from column_gathered
    where column_position = 0
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
    from stepped
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
        previous_last_event_order,
        previous_rebuilt_generation,
        previous_version_count
    from opened
    where opens_version
),

closed as (
    select
        *,
        lead(version) over (partition by key_id order by seq) as next_version,
        -- the versions this run wrote for the key
        count(*) over (partition by key_id) as written_version_count
    from versions
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
        closed.key_id,
        closed.version,
        closed.version.opened_order.change_position as valid_from_position,
        closed.version.opened_at as valid_from,
        closed.next_version.opened_order.change_position as valid_to_position,
        closed.next_version.opened_at as valid_to,
        closed.next_version.operation as closed_by_operation,
        closed.next_version is null as is_current,
        -- the key's versions in the history mart: a key continued on the fast path wrote its
        -- current version again (the same version_id, once in the mart) and its new versions;
        -- a rebuilt or new key wrote all of its versions
        case
            when closed.is_rebuilt or closed.previous_version_count is null then closed.written_version_count
            else closed.previous_version_count + closed.written_version_count - 1
        end as version_count,
        closed.is_rebuilt,
        case
            when closed.is_rebuilt or closed.previous_rebuilt_generation is null then '{{ generation }}'
            else closed.previous_rebuilt_generation
        end as rebuilt_generation,
        greatest(
            case when not closed.is_rebuilt then closed.previous_last_event_order end,
            closed.last_new_event_order
        ) as last_event_order,
        closed.feed,
        '{{ generation }}' as history_generation
    from closed
)

select * from final
