{#-
    Keyed changes with their transaction's completeness (DESIGN.md §6.1). A table, written
    once per run: change_log, pending_changes and their tests all read it (ADR 0006).

    The transaction's figures are windows over (feed, transaction_id), the same figures and
    rule (cdc_transaction_is_complete) as int_transactions_grouped, whose aggregate they
    replace here: one shuffle of the changes instead of an aggregate and a join to it. A change
    without a transaction id belongs to no transaction (an inner join to the grouped
    transactions dropped it too).
-#}

{{ config(materialized='table') }}

with

changes as (
    select * from {{ ref('int_changes_keyed') }}
    where transaction_id is not null
),

transaction_figures as (
    select
        *,
        count(*) over one_transaction as transaction_change_count,
        -- count(distinct) is no window function; collect_set skips nulls as it does
        size(collect_set(transaction_sequence) over one_transaction) as distinct_sequence_count,
        max(case when is_transaction_end then transaction_sequence end) over one_transaction as end_sequence,
        count(is_transaction_end) over one_transaction as marker_count
    from changes
    window one_transaction as (partition by feed, transaction_id)
),

flagged as (
    select
        * except (distinct_sequence_count, marker_count),
        {{ cdc_transaction_is_complete('marker_count', 'end_sequence', 'distinct_sequence_count') }}
            as is_transaction_complete
    from transaction_figures
)

select * from flagged
