with

raw_ingested_files as (
    select * from {{ source('cdc', 'raw_ingested_files') }}
),

renamed as (
    select
        concat_ws(':', feed, source_file, cast(byte_start as string), ingest_batch_id) as ingested_file_id,
        feed,
        source_file,
        format,
        status,
        message,
        sha256,
        prefix_sha256,
        file_size as file_size_bytes,
        byte_start,
        byte_end,
        record_index_start,
        record_index_end,
        rows as row_count,
        rejects as reject_count,
        reject_bytes,
        warnings,
        modification_time as modified_at,
        ingested_at,
        ingest_batch_id
    from raw_ingested_files
)

select * from renamed
