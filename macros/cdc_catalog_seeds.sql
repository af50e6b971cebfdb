{% macro cdc_catalog_seeds() %}
    {#-
        The catalog seeds of columns in effect, as relations: cdc_columns (the project's own
        tables), and cdc_demo_columns (seeds/demo/) while var('cdc_demo') is true.
    -#}
    {%- set seeds = [ref('cdc_columns')] -%}
    {%- if var('cdc_demo', false) -%}
        {%- do seeds.append(ref('cdc_demo_columns')) -%}
    {%- endif -%}
    {{ return(seeds) }}
{% endmacro %}
