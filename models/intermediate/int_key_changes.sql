{#-
    Every key change on record (ADR 0008): an UPDATE whose before image has another key, one
    row per change, partitioned by the change_log generation that appended it. Each run adds
    the generations after the watermark (cdc_state_watermark: the ones the state has not
    applied yet), overwriting those partitions, so a run killed before int_key_state is
    written is repeated without duplicates. int_apply_keys reads it for the key-change closure
    of a rebuilt key instead of scanning all of change_log, and leaves the closure out when
    there is no partition at all.
-#}

{{ config(
    materialized='incremental',
    incremental_strategy='insert_overwrite',
    on_schema_change='fail',
    partition_by=['applied_generation'],
) }}

{#- called outside the if below: dbt records the source this reads when it parses the model -#}
{%- set watermark = cdc_state_watermark() %}

with

logged_changes as (
    select * from {{ ref('int_changes_logged') }}
),

key_changes as (
    select
        change_id,
        feed,
        source_schema,
        source_table,
        before_primary_key,
        primary_key,
        before_key_id,
        key_id,
        applied_generation
    from logged_changes
    where
        operation = 'UPDATE'
        and before_primary_key is not null
        and before_primary_key != primary_key
        -- the generations this run applies (all of them on a first build or a full refresh)
        and applied_generation > {{ watermark if is_incremental() else "''" }}
)

select * from key_changes
