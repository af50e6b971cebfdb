{% macro cdc_format_enabled(format) %}
    {#- True when the staging model of feed format `format` is enabled (cdc_feed_formats). -#}
    {{ return(format in cdc_feed_formats()) }}
{% endmacro %}
