with

raw_rejects as (
    select * from {{ source('cdc', 'raw_rejects') }}
),

renamed as (
    select
        concat_ws(':', feed, source_file, cast(record_offset as string), reason, ingest_batch_id) as reject_id,
        feed,
        source_file,
        reason,
        message,
        excerpt_hex,
        record_offset,
        record_length,
        record_index,
        ingested_at,
        ingest_batch_id
    from raw_rejects
)

select * from renamed
