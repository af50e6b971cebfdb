{% macro cdc_explicit_load_position(feed_format, file_name) %}
    {#-
        SQL string expression: the change position of the full-load rows of the row's feed
        (column `feed`) and file, for feeds of `feed_format` whose option `load_position` is
        `explicit` (formats/qlik_kafka_messages.md, Ordering position): the position of the
        first pattern of option `load_positions` (file-name pattern -> 35-digit change
        sequence) that `file_name` matches; 35 zeros for a file no pattern matches and for
        every other feed.
    -#}
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
