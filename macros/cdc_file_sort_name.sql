{% macro cdc_file_sort_name(feed_format, file_name) %}
    {#-
        SQL string expression: the name a file of the row's feed (column `feed`) sorts by,
        from option `file_order` of the feeds of `feed_format` (formats/linkexpress_extract.md,
        Ordering position). `name` (the default): the file name itself. A list of file-name
        patterns (`*` any run of characters, `?` one character; an exact name matches itself):
        the 4-digit number of the first pattern the name matches, `/`, the name; a name no
        pattern matches sorts after all of them, by name.
    -#}
    {%- set feeds = cdc_feeds() -%}
    {%- set ordered = [] -%}
    {%- for name, spec in feeds.items() if spec.format == feed_format -%}
        {%- set order = (spec.options or {}).get('file_order', 'name') -%}
        {%- if order is not string -%}
            {%- do ordered.append((name, order)) -%}
        {%- endif -%}
    {%- endfor -%}
    {%- if ordered | length == 0 -%}
        {{ file_name }}
    {%- else -%}
    (case
        {%- for name, patterns in ordered %}
            {%- for pattern in patterns %}
        when feed = {{ cdc_string_literal(name) }} and {{ file_name }} like {{ cdc_like_pattern(pattern) }}
            then concat('{{ '%04d' | format(loop.index0) }}/', {{ file_name }})
            {%- endfor %}
        when feed = {{ cdc_string_literal(name) }} then concat('{{ '%04d' | format(patterns | length) }}/', {{ file_name }})
        {%- endfor %}
        else {{ file_name }}
    end)
    {%- endif -%}
{% endmacro %}
