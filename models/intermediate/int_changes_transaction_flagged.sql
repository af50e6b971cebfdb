{#-
    Keyed changes with their transaction's completeness (DESIGN.md §6.1). A table, written
    once per run: change_log, pending_changes and their tests all read it (ADR 0006).

    The transaction's figures are windows over (feed, transaction_id), the same figures and
    rule (cdc_transaction_is_complete) as int_transactions_grouped, whose aggregate they
    replace here: one shuffle of the changes instead of an aggregate and a join to it. A change
    without a transaction id belongs to no transaction (an inner join to the grouped
    transactions dropped it too).

    Feeds whose format marks no transaction end (qlik_change_tables: no end marker, so every
    transaction is complete, formats/qlik_change_tables.md) skip the windows, and their
    shuffle by transaction: their changes are complete, with a null end_sequence and
    transaction_change_count (read by pending_changes only, which never holds them).
-#}

{{ config(materialized='table') }}

{%- set unmarked_feeds = [] %}
{%- for feed, spec in cdc_feeds().items() if spec.get('format') == 'qlik_change_tables' %}
    {%- do unmarked_feeds.append(cdc_string_literal(feed)) %}
{%- endfor %}
{%- set is_unmarked = 'feed in (' ~ unmarked_feeds | join(', ') ~ ')' if unmarked_feeds else 'false' %}

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
    where not {{ is_unmarked }}
    window one_transaction as (partition by feed, transaction_id)
),

flagged as (
    select
        * except (distinct_sequence_count, marker_count),
        {{ cdc_transaction_is_complete('marker_count', 'end_sequence', 'distinct_sequence_count') }}
            as is_transaction_complete
    from transaction_figures
    union all
    select
        *,
        cast(null as bigint) as transaction_change_count,
        cast(null as int) as end_sequence,
        true as is_transaction_complete
    from changes
    where {{ is_unmarked }}
)

select * from flagged
