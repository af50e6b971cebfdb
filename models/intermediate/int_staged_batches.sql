{#-
    The ingest batches whose records this run's staging models have read and whose changes
    reached change_log or pending_changes (ADR 0007): the watermark of the next run's working
    set. Written after both, so a run killed before it reads its new batches again (change_log
    appends a change_id once). The batches are those the staging models saw as new when they
    compiled (cdc_working_set), not whatever was committed since.
-#}

{{ config(
    materialized='incremental',
    incremental_strategy='append',
) }}

{%- set new_batches = [] -%}
{%- for kind, feed, batch, source_file, record_offset in cdc_working_set() -%}
    {%- if kind == 'new' -%}
        {%- do new_batches.append(batch) -%}
    {%- endif -%}
{%- endfor %}

-- depends_on: {{ ref('int_working_set') }}
-- depends_on: {{ ref('int_changes_logged') }}
-- depends_on: {{ ref('int_changes_pending') }}

with

committed_batches as (
    select distinct ingest_batch_id
    from {{ source('cdc', 'raw_ingested_files') }}
    where ingest_batch_id != '00000000T000000000000'
),

{% if is_incremental() %}
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
