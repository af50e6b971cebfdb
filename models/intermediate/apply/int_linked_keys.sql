{#-
    Every pair of keys that a chain of key changes on record links, both ways (ADR 0026): a key
    and each key its row came from or went to, however many key changes away. Over
    int_key_changes alone (no event of the run), so it costs one small job when there is no
    key change. int_apply_keys rebuilds the keys linked to a rebuilt key.
-#}

with recursive

key_change_edges as (
    -- every key change on record, both ways (key → other key): a rebuilt key takes the keys its
    -- row came from and went to along, since their rows depend on each other (ADR 0008)
    select
        edge.key_id,
        edge.other_key_id
    from (
        select
            explode(array(
                named_struct('key_id', before_key_id, 'other_key_id', key_id),
                named_struct('key_id', key_id, 'other_key_id', before_key_id)
            )) as edge
        from {{ ref('int_key_changes') }}
    ) as key_changes
),

key_change_paths (origin_key_id, key_id, path) as (
    -- every key a chain of key changes reaches from a key, one key change further each step,
    -- never back to a key of the path: over the key changes alone (no event of this run), so
    -- it costs one small job when there is none. One step per key change of the longest
    -- chain: the engine's settings lift Spark's default bound of 100 steps
    -- (spark.sql.cteRecursionLevelLimit in python_udfs/spark.py and profiles.yml)
    select
        key_id as origin_key_id,
        other_key_id as key_id,
        array(key_id, other_key_id) as path
    from key_change_edges
    union all
    select
        key_change_paths.origin_key_id,
        key_change_edges.other_key_id as key_id,
        concat(key_change_paths.path, array(key_change_edges.other_key_id)) as path
    from key_change_paths
    inner join key_change_edges on key_change_paths.key_id = key_change_edges.key_id
    where not array_contains(key_change_paths.path, key_change_edges.other_key_id)
)

-- LIMIT ALL lifts Spark's cap on the rows a recursive CTE returns (a million)
select distinct
    paths.origin_key_id as key_id,
    paths.key_id as linked_key_id
from (select * from key_change_paths limit all) as paths  -- noqa: AM09
