{#- Every rejected byte range or line of every feed, for triage. -#}

with

rejects as (
    select * from {{ ref('stg_cdc__rejects') }}
)

select * from rejects
