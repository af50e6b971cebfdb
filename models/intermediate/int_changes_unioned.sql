{#- Every feed format's staged changes in one relation (canonical change event shape). -#}

with

qlik_change_tables_changes as (
    select * from {{ ref('stg_qlik_change_tables__changes') }}
),

qlik_kafka_changes as (
    select * from {{ ref('stg_qlik_kafka__changes') }}
),

goldengate_trail_changes as (
    select * from {{ ref('stg_goldengate_trail__changes') }}
),

hirdb_update_sql_changes as (
    select * from {{ ref('stg_hirdb_update_sql__changes') }}
),

linkexpress_extract_changes as (
    select * from {{ ref('stg_linkexpress_extract__changes') }}
),

unioned as (
    select {{ cdc_change_columns() | join(', ') }} from qlik_change_tables_changes
    union all
    select {{ cdc_change_columns() | join(', ') }} from qlik_kafka_changes
    union all
    select {{ cdc_change_columns() | join(', ') }} from goldengate_trail_changes
    union all
    select {{ cdc_change_columns() | join(', ') }} from hirdb_update_sql_changes
    union all
    select {{ cdc_change_columns() | join(', ') }} from linkexpress_extract_changes
)

select * from unioned
