{% macro cdc_catalog_seeds() %}
    {#- The catalog seeds of columns in effect, as relations (macros/_macros.yml). -#}
    {%- set seeds = [ref('cdc_columns')] -%}
    {%- if var('cdc_demo', false) -%}
        {%- do seeds.append(ref('cdc_demo_columns')) -%}
    {%- endif -%}
    {{ return(seeds) }}
{% endmacro %}
