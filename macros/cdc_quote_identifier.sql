{% macro cdc_quote_identifier(name) -%}
    {#- A Spark SQL identifier in backticks, a backtick in `name` doubled. -#}
    `{{ name | string | replace("`", "``") }}`
{%- endmacro %}
