{{ config(severity='warn') }}
{#-
    Changes of tables missing from seeds/cdc_columns.csv have no primary key and do not reach
    current state. Add the table (or run `cdc scaffold`), then `cdc run`: the next run logs
    them again with their key and applies them (ADR 0021), and change_log shows them keyed.

    A warning blocks nothing, so the test also hangs off int_staged_batches (depends_on), a
    model no other model reads, as conflicting_duplicate_changes does: dbt build then runs it
    beside the apply models, not between change_log and them (a test of change_log alone holds
    back change_log's children until it ends).
-#}

-- depends_on: {{ ref('int_staged_batches') }}

with

change_log as (
    select * from {{ ref('change_log') }}
)

select
    feed,
    source_schema,
    source_table,
    count(*) as change_count
from change_log
where not is_in_catalog and operation != 'EVENT'
group by feed, source_schema, source_table
