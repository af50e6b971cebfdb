{#- Changes of transactions whose end has not arrived yet; a later run applies them. -#}

with

changes as (
    select * from {{ ref('int_changes_transaction_flagged') }}
),

open_changes as (
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
        end_sequence,
        transaction_change_count,
        committed_at,
        source_file,
        record_offset,
        ingest_batch_id,
        transaction_first_batch_id,
        transaction_first_source_file
    from changes
    where not is_transaction_complete
)

select * from open_changes
