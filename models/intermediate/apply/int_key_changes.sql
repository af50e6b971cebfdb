{#-
    Every key change on record (ADR 0030): an UPDATE whose before image has another key, one
    row per change. Ephemeral (ADR 0028): the is_key_change partition of change_log's store
    int_changes_logged, of every generation, which Spark lists alone (partition pruning), so
    int_linked_keys finds the keys a chain of key changes links without scanning the log.
-#}

with

logged_changes as (
    select * from {{ ref('int_changes_logged') }}
),

key_changes as (
    select
        change_id,
        feed,
        source_schema,
        source_table,
        before_primary_key,
        primary_key,
        before_key_id,
        key_id,
        applied_generation
    from logged_changes
    where is_key_change
)

select * from key_changes
