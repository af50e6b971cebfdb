{#-
    The row each key change among this run's events carries to its new key (ADR 0026), one row
    per key change: the new key's segment the change starts (child_key_id, child_segment) and
    the row the old key's segment ended with, laid over what an earlier key change carried
    into that segment (a recursive CTE along each chain). Reads the is_key_change partition of
    int_apply_events and the old keys' segments: a few rows, none without a key change.
-#}

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

key_change_parents as (
    -- each key change with the row its parent segment ended with (empty when it had none)
    select
        key_change_links.*,
        coalesce(parent_rows.row, cast(map() as map<string, string>)) as parent_row  -- noqa: LT01
    from key_change_links
    left join parent_rows
        on
            key_change_links.parent_key_id = parent_rows.key_id
            and key_change_links.parent_segment = parent_rows.segment
),

carried_rows (child_key_id, child_segment, row) as (
    -- the row each key change carries: the parent segment's row, laid over the row an earlier
    -- key change carried into that segment (each chain followed from its first key): one step
    -- per key change of the longest chain, beyond Spark's default bound of 100 steps
    -- (spark.sql.cteRecursionLevelLimit in python_udfs/spark.py and profiles.yml)
    select
        links.child_key_id,
        links.child_segment,
        links.parent_row as row
    from key_change_parents as links
    left anti join key_change_links as earlier
        on links.parent_key_id = earlier.child_key_id and links.parent_segment = earlier.child_segment
    union all
    select
        links.child_key_id,
        links.child_segment,
        {{ cdc_overlay('carried_rows.row', 'links.parent_row') }} as row
    from carried_rows
    inner join key_change_parents as links
        on carried_rows.child_key_id = links.parent_key_id and carried_rows.child_segment = links.parent_segment
)

-- LIMIT ALL lifts Spark's cap on the rows a recursive CTE returns (a million)
select * from carried_rows limit all  -- noqa: AM09
