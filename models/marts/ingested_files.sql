{#- The ingest manifest: what was read from each landing file, and when. -#}

{{ config(materialized='table') }}

with

ingested_files as (
    select * from {{ ref('stg_cdc__ingested_files') }}
)

select * from ingested_files
