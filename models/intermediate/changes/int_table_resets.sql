{#-
    Table resets (DESIGN.md §6.2, §6.4): every TRUNCATE, and the start of every full load (the
    first row, in change order, of the LOAD rows of one table and one transaction). A reset
    removes every row of the table with an earlier position; the load's rows then set theirs.
    Only of catalog tables: a table not in the catalog has no key to remove, and its changes
    are logged again with their key when it is declared (ADR 0021).
-#}

with

logged_changes as (
    select * from {{ ref('int_changes_logged') }}
    where is_in_catalog
),

truncates as (
    select
        feed,
        source_schema,
        source_table,
        {{ cdc_change_order() }} as reset_order,
        committed_at,
        operation,
        cast(null as string) as load_transaction,
        applied_generation
    from logged_changes
    where operation = 'TRUNCATE' and source_table is not null
),

load_starts as (
    select
        feed,
        source_schema,
        source_table,
        min({{ cdc_change_order() }}) as reset_order,
        min_by(committed_at, {{ cdc_change_order() }}) as committed_at,
        'LOAD' as operation,
        transaction_id as load_transaction,
        max(applied_generation) as applied_generation
    from logged_changes
    where operation = 'LOAD'
    group by feed, source_schema, source_table, transaction_id
),

resets as (
    select * from truncates
    union all
    select * from load_starts
),

final as (
    select
        *,
        named_struct(
            'event_order', reset_order,
            'event_rank', 0,
            'kind', 'REMOVE',
            'image', cast(null as map<string, string>),  -- noqa: LT01
            'committed_at', committed_at,
            'operation', operation,
            'load_transaction', load_transaction,
            'table_columns', cast(null as array<string>),
            'source_key_id', cast(null as string)
        ) as event
    from resets
)

select * from final
