{#-
    One row per transaction and whether it is complete. A feed with end markers (Kafka
    transactionLastEvent) completes a transaction when the end marker and every sequence
    number up to it have arrived (formats/qlik_kafka_messages.md, "when is a transaction
    complete"); a transaction without markers (change tables, older Replicate) is complete.
-#}

with

changes as (
    select * from {{ ref('int_changes_unioned') }}
),

transactions as (
    select
        feed,
        transaction_id,
        count(*) as change_count,
        count(distinct transaction_sequence) as distinct_sequence_count,
        max(case when is_transaction_end then transaction_sequence end) as end_sequence,
        count(is_transaction_end) as marker_count,
        min(change_position) as first_change_position,
        max(change_position) as last_change_position,
        max(committed_at) as committed_at
    from changes
    group by feed, transaction_id
),

completeness as (
    select
        concat_ws(':', feed, transaction_id) as transaction_key,
        *,
        {{ cdc_transaction_is_complete('marker_count', 'end_sequence', 'distinct_sequence_count') }}
            as is_complete
    from transactions
)

select * from completeness
