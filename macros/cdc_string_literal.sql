{% macro cdc_string_literal(value) -%}
    {#- A Spark SQL string literal holding a value exactly (macros/_macros.yml). -#}
    {%- if value is none -%}
        cast(null as string)
    {%- else -%}
        '{{ value | string | replace("\\", "\\\\") | replace("'", "\\'") | replace("\n", "\\n") | replace("\r", "\\r") | replace("\t", "\\t") }}'
    {%- endif -%}
{%- endmacro %}
