{#-
    The store behind the change_log mart, and what the apply chain reads: the changes of
    complete transactions only (DESIGN.md §5, §6.1). Incremental:
    each run appends, as partition applied_generation = this run's generation, the complete
    changes of its working set (new ingest batches, and the batches of transactions still open,
    ADR 0007) whose change_id is not in the log yet. Re-delivered changes (same change_id) are
    never appended twice, so a run killed half way and started again appends exactly what is
    missing.
-#}

{{ config(
    materialized='incremental',
    incremental_strategy='append',
    on_schema_change='fail',
    partition_by=['applied_generation'],
) }}

with

changes as (
    select * from {{ ref('int_changes_transaction_flagged') }}
),

committed_changes as (
    select * from changes
    where is_transaction_complete
),

{% if is_incremental() %}
candidate_ids as (
    select change_id from committed_changes
),

applied_changes as (
    -- the run's candidates already in the log: a semi-join whose small side (this run's
    -- working set) is broadcast, so the log is read once, by its change_id column, unshuffled
    select applied.change_id
    from {{ this }} as applied
    left semi join candidate_ids on applied.change_id = candidate_ids.change_id
),

new_changes as (
    select committed_changes.*
    from committed_changes
    left anti join applied_changes
        on committed_changes.change_id = applied_changes.change_id
),
{% else %}
    new_changes as (
        select * from committed_changes
    ),
{% endif %}

final as (
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
        '{{ cdc_generation() }}' as applied_generation
    from new_changes
)

select * from final
