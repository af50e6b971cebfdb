{#-
    Keyed changes with their transaction's completeness (DESIGN.md §6.1). A table, written
    once per run: change_log, pending_changes and their tests all read it (ADR 0006).
-#}

{{ config(materialized='table') }}

with

changes as (
    select * from {{ ref('int_changes_keyed') }}
),

transactions as (
    select * from {{ ref('int_transactions_grouped') }}
),

flagged as (
    select
        changes.*,
        transactions.is_complete as is_transaction_complete,
        transactions.end_sequence,
        transactions.change_count as transaction_change_count
    from changes
    inner join transactions
        on
            changes.feed = transactions.feed
            and changes.transaction_id = transactions.transaction_id
)

select * from flagged
