{#-
    Changes of transactions whose end has not arrived yet, for readers; a later run applies
    them. A view of int_changes_pending, which each run rewrites and the next run's working set
    reads (issue 45: no int model reads a mart).
-#}

{{ config(materialized='view') }}

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
    transaction_first_record
from {{ ref('int_changes_pending') }}
