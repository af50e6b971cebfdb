{#-
    The table behind the pending_changes mart: changes of transactions whose end has not
    arrived yet; a later run applies them (its working set starts at their first records,
    python_udfs/working_set.py). A run's
    working set (ADR 0007) may read part of a transaction already applied (its later records
    only, in the files of a transaction still pending): such a transaction looks incomplete
    here, and its changes, already in int_changes_logged, are not pending.
-#}

{{ config(materialized='table') }}

with

changes as (
    select * from {{ ref('int_changes_transaction_flagged') }}
),

logged_changes as (
    select * from {{ ref('int_changes_logged') }}
),

incomplete_changes as (
    select * from changes
    where not is_transaction_complete
),

incomplete_ids as (
    -- their ids straight from the staging tables (no join to inflate Spark's size estimate):
    -- a small run's are broadcast, so the log is read unshuffled, by change_id
    select change_id from {{ ref('int_changes_unioned') }}
    where transaction_id is not null and not is_transaction_complete
),

applied_changes as (
    select logged_changes.change_id
    from logged_changes
    left semi join incomplete_ids on logged_changes.change_id = incomplete_ids.change_id
),

open_changes as (
    select
        incomplete_changes.change_id,
        incomplete_changes.feed,
        incomplete_changes.source_schema,
        incomplete_changes.source_table,
        incomplete_changes.change_position,
        incomplete_changes.operation,
        incomplete_changes.transaction_id,
        incomplete_changes.primary_key,
        incomplete_changes.transaction_sequence,
        incomplete_changes.end_sequence,
        incomplete_changes.transaction_change_count,
        incomplete_changes.committed_at,
        incomplete_changes.source_file,
        incomplete_changes.record_offset,
        incomplete_changes.ingest_batch_id,
        incomplete_changes.transaction_first_batch_id,
        incomplete_changes.transaction_first_record
    from incomplete_changes
    left anti join applied_changes on incomplete_changes.change_id = applied_changes.change_id
)

select * from open_changes
