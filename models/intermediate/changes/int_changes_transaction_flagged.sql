{#-
    Keyed changes with their transaction's completeness (DESIGN.md §6.1). The staging models
    compute the transaction's figures (cdc_transaction_figures: the same figures and rule,
    cdc_transaction_is_complete, as int_transactions_grouped) with the windows they already
    partition by transaction, so this model shuffles nothing, and it is a view: its two
    readers, change_log and pending_changes, read the staging tables through it (a union and a
    broadcast join to the catalog) instead of a copy of every change written once per run.
    A change without a transaction id belongs to no transaction and is left out.
-#}

with

changes as (
    select * from {{ ref('int_changes_keyed') }}
),

flagged as (
    select * from changes
    where transaction_id is not null
)

select * from flagged
