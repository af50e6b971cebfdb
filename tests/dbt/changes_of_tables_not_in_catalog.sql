{{ config(severity='warn') }}
{#-
    Changes of tables missing from seeds/cdc_columns.csv have no primary key and do not reach
    current state. Add the table (or run `cdc scaffold`) to apply them.
-#}

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
