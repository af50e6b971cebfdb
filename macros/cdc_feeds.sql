{% macro cdc_feeds() %}
    {#-
        The feeds in effect, name -> {format, path, options}: var('cdc_feeds'), and while
        var('cdc_demo') is true the demo feeds of var('cdc_demo_feeds') too. The Python side
        (python_udfs/config.py, load_project) merges the same two vars the same way.
    -#}
    {%- set feeds = {} -%}
    {%- if var('cdc_demo', false) -%}
        {%- do feeds.update(var('cdc_demo_feeds', {}) or {}) -%}
    {%- endif -%}
    {%- do feeds.update(var('cdc_feeds', {}) or {}) -%}
    {{ return(feeds) }}
{% endmacro %}
