{{ config(severity='warn') }}
{#-
    The records this run's new ingest batches could not decode (open rejects), one row per
    reject: a warning in `dbt build` / `cdc run` ("WARN n rejects_of_this_run"), not a failure,
    since valid records around them were applied. `cdc rejects` lists every open reject with
    its file, offset, reason and message; `cdc restage` decodes them again once the cause is
    fixed (for example a table declared in the seeds).
-#}

with

rejects as (
    select * from {{ ref('ingest_rejects') }}
),

working_set as (
    select * from {{ ref('int_working_set') }}
),

this_run as (
    -- the new batches, and every batch of a feed the run reads whole (the first run, a full
    -- refresh, a feed with late files): kind 'all', feed null for every feed
    select rejects.reject_id
    from rejects
    inner join working_set
        on
            (working_set.kind = 'new' and rejects.ingest_batch_id = working_set.ingest_batch_id)
            or (
                working_set.kind = 'all'
                and (working_set.feed is null or rejects.feed = working_set.feed)
            )
    group by rejects.reject_id
)

select
    rejects.feed,
    rejects.source_file,
    rejects.record_offset,
    rejects.reason
from rejects
left semi join this_run on rejects.reject_id = this_run.reject_id
where rejects.restaged_batch_id is null
