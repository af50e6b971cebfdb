{#- The ordered change log of every feed: complete transactions only (DESIGN.md §5, §6.1). -#}

with

changes as (
    select * from {{ ref('int_changes_transaction_flagged') }}
),

committed_changes as (
    select
        change_id,
        feed,
        source_schema,
        source_table,
        change_position,
        operation,
        transaction_id,
        primary_key,
        transaction_sequence,
        before_image,
        after_image,
        changed_columns,
        is_in_catalog,
        committed_at,
        source_file,
        record_offset,
        record_index,
        ingest_batch_id
    from changes
    where is_transaction_complete
)

select * from committed_changes
order by feed, change_position, source_file, record_index
