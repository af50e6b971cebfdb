{#-
    The change log of every feed, for readers: the changes of complete transactions, one row
    each (DESIGN.md §5, §6.1). A view of int_changes_logged, the incremental store that each
    run appends to and that the apply chain reads (issue 45: no int model reads a mart).
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
    before_primary_key,
    key_id,
    before_key_id,
    transaction_sequence,
    before_image,
    after_image,
    changed_columns,
    is_in_catalog,
    committed_at,
    source_file,
    record_offset,
    record_index,
    ingest_batch_id,
    applied_generation
from {{ ref('int_changes_logged') }}
