{#-
    The ingest batches whose records this run's staging models have read and whose changes
    reached int_changes_logged or int_changes_pending (ADR 0007): the watermark of the next
    run's working set. Written after both, so a run killed before it reads its new batches again
    (int_changes_logged appends a change_id once). The batches are those the working set of the
    run (cdc_working_set) names as new, not whatever was committed since; when it reads every
    batch (a build without `cdc run`), every committed batch not yet listed.
-#}

{{ config(
    materialized='incremental',
    incremental_strategy='append',
) }}

{%- set new_batches = cdc_new_batches() %}

-- depends_on: {{ ref('int_changes_logged') }}
-- depends_on: {{ ref('int_changes_pending') }}

with

committed_batches as (
    select distinct ingest_batch_id
    from {{ source('cdc', 'raw_ingested_files') }}
    where ingest_batch_id != '00000000T000000000000'
),

{% if is_incremental() and new_batches is none %}
    new_batches as (
        select committed_batches.ingest_batch_id from committed_batches
        left anti join {{ this }} as staged on committed_batches.ingest_batch_id = staged.ingest_batch_id
    ),
{% elif is_incremental() %}
    new_batches as (
        select ingest_batch_id from committed_batches
        where ingest_batch_id in ('{{ new_batches | join("', '") }}')
    ),
{% else %}
    new_batches as (
        select ingest_batch_id from committed_batches
    ),
{% endif %}

final as (
    select
        ingest_batch_id,
        '{{ cdc_generation() }}' as staged_generation
    from new_batches
)

select * from final
