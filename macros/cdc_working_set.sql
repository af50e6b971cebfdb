{% macro cdc_working_set() %}
    {#- This run's working set, as `cdc run` decided it (macros/_macros.yml). -#}
    {%- if not execute -%}
        {{ return([]) }}
    {%- endif -%}
    {%- if graph.nodes is not defined -%}
        {{ return([('all', none, none, none, none)]) }}
    {%- endif -%}
    {{ return(fromjson(env_var('CDC_WORKING_SET', '[["all", null, null, null, null]]'))) }}
{% endmacro %}
