{% macro cdc_feed_formats() %}
    {#- The feed formats whose staging models are enabled (macros/_macros.yml). -#}
    {%- set all_formats = cdc_format_names() -%}
    {%- set configured = [] -%}
    {%- for spec in cdc_feeds().values() -%}
        {%- do configured.append(spec.get('format')) -%}
    {%- endfor -%}
    {%- set formats = [] -%}
    {%- for format in all_formats -%}
        {%- if format in configured or not configured -%}
            {%- do formats.append(format) -%}
        {%- endif -%}
    {%- endfor -%}
    {{ return(formats) }}
{% endmacro %}
