{% macro cdc_state_watermark() %}
    {#- The last change_log generation the apply merged (macros/_macros.yml). -#}
    {%- set watermark = env_var('CDC_STATE_WATERMARK', '-') if execute else '-' -%}
    {%- if flags.FULL_REFRESH -%}
        ''
    {%- elif watermark != '-' -%}
        {{ cdc_string_literal(watermark) }}
    {%- else -%}
        (select coalesce(max(history_generation), '') from {{ source('cdc_state', 'history') }})
    {%- endif -%}
{% endmacro %}
