with

raw_metadata as (
    select * from {{ source('cdc', 'raw_metadata') }}
),

renamed as (
    select
        feed,
        metadata_source,
        source_schema,
        source_table,
        table_version,
        schema_id,
        column_name,
        ordinal,
        source_type,
        length,
        precision,
        scale,
        primary_key_position,
        nullable as is_nullable,
        source_file,
        record_offset,
        record_index,
        ingested_at,
        ingest_batch_id
    from raw_metadata
)

select * from renamed
