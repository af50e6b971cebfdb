{#-
    Keyed changes with their transaction's completeness (DESIGN.md §6.1). A table, written
    once per run: change_log, pending_changes and their tests all read it (ADR 0006).
    The staging models compute the transaction's figures (cdc_transaction_figures: the same
    figures and rule, cdc_transaction_is_complete, as int_transactions_grouped) with the
    windows they already partition by transaction, so this model shuffles nothing. A change
    without a transaction id belongs to no transaction and is left out.
-#}

{{ config(materialized='table') }}

with

changes as (
    select * from {{ ref('int_changes_keyed') }}
),

flagged as (
    select * from changes
    where transaction_id is not null
)

select * from flagged
