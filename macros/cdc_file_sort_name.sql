{% macro cdc_file_sort_name(feed_format, file_name) %}
    {#- The name a file of the row's feed sorts by (macros/_macros.yml). -#}
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
