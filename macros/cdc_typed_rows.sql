{% macro cdc_typed_rows(mart, feed, source_schema, source_table, leading_columns, trailing_columns) %}
    {#-
        SELECT of one table's rows of a long mart (`mart`: current_state or history, whose `row`
        maps column → canonical text) with the catalog's columns cast to their spark_type
        between `leading_columns` and `trailing_columns` (lists of the mart's column names).
    -#}
    {%- for seed in cdc_catalog_seeds() %}
    -- depends_on: {{ seed }}
    {%- endfor %}
    {%- set columns = cdc_catalog_column_types(feed, source_schema, source_table) %}

with

mart_rows as (
    select * from {{ ref(mart) }}
),

table_rows as (
    select * from mart_rows
    where
        feed = {{ cdc_string_literal(feed) }}
        {%- if mart == 'current_state' %}
        and table_key = '{{ cdc_table_key(feed, source_schema, source_table) }}'
        {%- endif %}
        and source_schema = {{ cdc_string_literal(source_schema) }}
        and source_table = {{ cdc_string_literal(source_table) }}
),

typed as (
    select
        {%- for name in leading_columns %}
        {{ name }},
        {%- endfor %}
        {%- for column in columns %}
        cast(row[{{ cdc_string_literal(column[0]) }}] as {{ column[1] }}) as {{ cdc_quote_identifier(column[0] | lower) }},
        {%- endfor %}
        {{ trailing_columns | join(',\n        ') }}
    from table_rows
)

select * from typed
{% endmacro %}
