{% macro cdc_explicit_load_position(feed_format, file_name) %}
    {#- The change position of a full load's rows, by file pattern (macros/_macros.yml). -#}
    {%- set feeds = cdc_feeds() -%}
    {%- set explicit = [] -%}
    {%- for name, spec in feeds.items() if spec.format == feed_format -%}
        {%- set options = spec.options or {} -%}
        {%- if options.get('load_position') == 'explicit' and options.get('load_positions') -%}
            {%- do explicit.append((name, options.get('load_positions'))) -%}
        {%- endif -%}
    {%- endfor -%}
    {%- if explicit | length == 0 -%}
        repeat('0', 35)
    {%- else -%}
    (case
        {%- for name, positions in explicit %}
            {%- for pattern, position in positions.items() %}
        when feed = {{ cdc_string_literal(name) }} and {{ file_name }} like {{ cdc_like_pattern(pattern) }}
            then {{ cdc_string_literal(position) }}
            {%- endfor %}
        {%- endfor %}
        else repeat('0', 35)
    end)
    {%- endif -%}
{% endmacro %}
