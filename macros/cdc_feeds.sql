{% macro cdc_feeds() %}
    {#- The feeds in effect, name to format, path and options (macros/_macros.yml). -#}
    {%- set feeds = {} -%}
    {%- if var('cdc_demo', false) -%}
        {%- do feeds.update(var('cdc_demo_feeds', {}) or {}) -%}
    {%- endif -%}
    {%- do feeds.update(var('cdc_feeds', {}) or {}) -%}
    {{ return(feeds) }}
{% endmacro %}
