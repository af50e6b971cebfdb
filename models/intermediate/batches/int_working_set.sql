{#-
    This run's working set (ADR 0007, 0020) as `cdc run` decided it before the build and passed
    it in (macro cdc_working_set): one row per condition, what the staging models of this run
    read. Ephemeral: a CTE of its one reader, the warning rejects_of_this_run, so a run writes
    no table for it; the lineage still shows it.
-#}

{%- set rows = cdc_working_set() %}

with

working_set as (
    {%- for kind, feed, batch, source_file, record_offset in rows %}
        select
            {{ cdc_string_literal(kind) }} as kind,
            {{ cdc_string_literal(feed) }} as feed,
            {{ cdc_string_literal(batch) }} as ingest_batch_id,
            {{ cdc_string_literal(source_file) }} as source_file,
            cast({{ 'null' if record_offset is none else record_offset | int }} as bigint) as record_offset
        {% if not loop.last %}union all{% endif %}
    {%- else %}
        select
            cast(null as string) as kind,
            cast(null as string) as feed,
            cast(null as string) as ingest_batch_id,
            cast(null as string) as source_file,
            cast(null as bigint) as record_offset
        where false
    {%- endfor %}
)

select * from working_set
