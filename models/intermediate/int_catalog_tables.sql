{#- One row per catalog table: its columns in ordinal order and its key columns in key order. -#}

with

catalog_columns as (
    {%- for seed in cdc_catalog_seeds() %}
        select * from {{ seed }}
        {%- if not loop.last %}
            union all
        {%- endif %}
    {%- endfor %}
),

tables_summarised as (
    select
        feed,
        source_schema,
        source_table,
        transform(
            array_sort(collect_list(named_struct('ordinal', ordinal, 'column_name', column_name))),
            c -> c.column_name
        ) as column_names,
        transform(
            array_sort(collect_list(
                case
                    when primary_key_position > 0
                        then named_struct('ordinal', primary_key_position, 'column_name', column_name)
                end
            )),
            c -> c.column_name
        ) as key_column_names
    from catalog_columns
    group by feed, source_schema, source_table
)

select * from tables_summarised
