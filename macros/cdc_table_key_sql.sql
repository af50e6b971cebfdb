{% macro cdc_table_key_sql(feed='feed', source_schema='source_schema', source_table='source_table') -%}
    {#- SQL string expression of the table key (see cdc_table_key) of the row's columns. -#}
    substr(md5(concat(
        cast(length({{ feed }}) as string), ':', {{ feed }},
        cast(length({{ source_schema }}) as string), ':', {{ source_schema }},
        cast(length({{ source_table }}) as string), ':', {{ source_table }}
    )), 1, 16)
{%- endmacro %}
