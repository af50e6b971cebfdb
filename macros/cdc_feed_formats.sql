{% macro cdc_feed_formats() %}
    {#-
        The feed formats the staging models stage, in the order int_changes_unioned unions
        them: those cdc_feeds() configures, or all of cdc_format_names() when it configures none.
    -#}
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
