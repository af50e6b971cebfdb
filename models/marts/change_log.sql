{#- The ordered change log of every feed: complete transactions only (DESIGN.md §5, §6.1). -#}

with

changes as (
    select * from {{ ref('int_changes_keyed') }}
),

transactions as (
    select * from {{ ref('int_transactions_grouped') }}
),

committed_changes as (
    select
        changes.change_id,
        changes.feed,
        changes.source_schema,
        changes.source_table,
        changes.change_position,
        changes.operation,
        changes.transaction_id,
        changes.primary_key,
        changes.transaction_sequence,
        changes.before_image,
        changes.after_image,
        changes.changed_columns,
        changes.is_in_catalog,
        changes.committed_at,
        changes.source_file,
        changes.record_offset,
        changes.record_index,
        changes.ingest_batch_id
    from changes
    inner join transactions
        on
            changes.feed = transactions.feed
            and changes.transaction_id = transactions.transaction_id
    where transactions.is_complete
)

select * from committed_changes
order by feed, change_position, source_file, record_index
