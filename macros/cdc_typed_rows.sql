{% macro cdc_typed_rows(mart, feed, source_schema, source_table, leading_columns, trailing_columns) %}
    {#- One table's rows of a long mart, typed (macros/_macros.yml). -#}
    {%- set columns = cdc_typed_columns(model) %}
    {%- if execute and not columns %}
        {{ exceptions.raise_compiler_error(
            "model " ~ model.name ~ " has no column with a data_type in its YAML, so it has nothing to cast: run `cdc scaffold` (it writes the typed models' YAML from the catalog seeds) or delete the model file."
        ) }}
    {%- endif %}

with

mart_rows as (
    select * from {{ ref(mart) }}
),

table_rows as (
    select * from mart_rows
    where
        feed = {{ cdc_string_literal(feed) }}
        and table_key = '{{ cdc_table_key(feed, source_schema, source_table) }}'
        and source_schema = {{ cdc_string_literal(source_schema) }}
        and source_table = {{ cdc_string_literal(source_table) }}
),

typed as (
    select
        {%- for name in leading_columns %}
        {{ name }},
        {%- endfor %}
        {%- for column in columns %}
        cast(row[{{ cdc_string_literal(column.source_column) }}] as {{ column.data_type }}) as {{ cdc_quote_identifier(column.name) }},
        {%- endfor %}
        {{ trailing_columns | join(',\n        ') }}
    from table_rows
)

select * from typed
{% endmacro %}
