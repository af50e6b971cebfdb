{#-
    Every rejected byte range or line of every feed, for triage, with the batch of
    `cdc restage` that decoded its range again (null while the reject is open).
-#}

{{ config(materialized='table') }}

with

rejects as (
    select * from {{ ref('stg_cdc__rejects') }}
),

restaged_files as (
    select * from {{ ref('stg_cdc__ingested_files') }}
    where status = 'restaged'
),

restages as (
    select
        rejects.reject_id,
        min(restaged_files.ingest_batch_id) as restaged_batch_id
    from rejects
    inner join restaged_files
        on
            rejects.feed = restaged_files.feed
            and rejects.source_file = restaged_files.source_file
            and rejects.ingest_batch_id < restaged_files.ingest_batch_id
            and rejects.record_offset >= restaged_files.byte_start
            and rejects.record_offset < restaged_files.byte_end
    group by rejects.reject_id
),

final as (
    select
        rejects.*,
        restages.restaged_batch_id
    from rejects
    left join restages on rejects.reject_id = restages.reject_id
)

select * from final
