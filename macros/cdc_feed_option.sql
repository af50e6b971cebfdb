{% macro cdc_feed_option(feed_format, option, default) %}
    {#- A decoder option of the row's feed, as SQL (macros/_macros.yml). -#}
    {%- set feeds = cdc_feeds() -%}
    {%- set names = [] -%}
    {%- for name, spec in feeds.items() if spec.format == feed_format -%}
        {%- do names.append(name) -%}
    {%- endfor -%}
    {%- if names | length == 0 -%}
        {{ cdc_string_literal(default) }}
    {%- else -%}
    (case feed
        {%- for name in names %}
        when {{ cdc_string_literal(name) }} then {{ cdc_string_literal((feeds[name].options or {}).get(option, default)) }}
        {%- endfor %}
        else {{ cdc_string_literal(default) }}
    end)
    {%- endif %}
{% endmacro %}
