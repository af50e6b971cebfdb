{% macro cdc_broadcast(relations) -%}
    {#- A broadcast hint for a run's new-batch side of a join, none on a first build (macros/_macros.yml). -#}
    {%- set watermark = env_var('CDC_STATE_WATERMARK', '-') if execute else '-' -%}
    {%- if not (flags.FULL_REFRESH or watermark == '') -%}
        /*+ broadcast({{ relations | join(', ') }}) */
    {%- endif -%}
{%- endmacro %}
