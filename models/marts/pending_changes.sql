{#- Changes of transactions whose end has not arrived yet; a later run applies them. -#}

with

changes as (
    select * from {{ ref('int_changes_keyed') }}
),

transactions as (
    select * from {{ ref('int_transactions_grouped') }}
),

open_changes as (
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
        transactions.end_sequence,
        transactions.change_count as transaction_change_count,
        changes.committed_at,
        changes.source_file,
        changes.record_offset,
        changes.ingest_batch_id
    from changes
    inner join transactions
        on
            changes.feed = transactions.feed
            and changes.transaction_id = transactions.transaction_id
    where not transactions.is_complete
)

select * from open_changes
