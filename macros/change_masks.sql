{% macro cdc_mask_bit(mask_hex, bit_index, bit_order="'lsb_last_hex'") %}
    {#-
        True when bit `bit_index` (0-based, SQL expression) of a change/column mask is set.
        `mask_hex` is normalized uppercase hex of even length (as staging writes it).
        `bit_order` is a SQL string expression: 'lsb_last_hex' reads the hex text as one
        big-endian number (bit k = (v >> k) & 1); 'lsb_first_byte' reads byte 0 as bits 0-7.
        Bits beyond the mask are false. Source: formats/qlik_change_tables.md, Change mask.
    -#}
    (case
        when {{ bit_order }} = 'lsb_first_byte'
            then (
                floor(({{ bit_index }}) / 8) < length({{ mask_hex }}) / 2
                and shiftright(
                    cast(conv(substr({{ mask_hex }}, cast(floor(({{ bit_index }}) / 8) * 2 + 1 as int), 2), 16, 10) as int),
                    cast(({{ bit_index }}) % 8 as int)
                ) & 1 = 1
            )
        else (
            floor(({{ bit_index }}) / 4) < length({{ mask_hex }})
            and shiftright(
                cast(conv(substr({{ mask_hex }}, cast(length({{ mask_hex }}) - floor(({{ bit_index }}) / 4) as int), 1), 16, 10) as int),
                cast(({{ bit_index }}) % 4 as int)
            ) & 1 = 1
        )
    end)
{% endmacro %}


{% macro cdc_changed_columns(mask_hex, column_names, first_bit=0, bit_order="'lsb_last_hex'") %}
    {#-
        The names in array `column_names` whose mask bit is set, in column order. Element i of
        the array is bit i; elements before `first_bit` (Qlik header columns) are ignored.
        Null when the mask is null or empty (the feed sends no change mask).
    -#}
    (case
        when {{ mask_hex }} is null or {{ mask_hex }} = '' then null
        else transform(
            filter(
                transform({{ column_names }}, (column_name, i) -> named_struct('column_name', column_name, 'bit', i)),
                c -> c.bit >= {{ first_bit }} and {{ cdc_mask_bit(mask_hex, 'c.bit', bit_order) }}
            ),
            c -> c.column_name
        )
    end)
{% endmacro %}


{% macro cdc_feed_option(feed_format, option, default) %}
    {#-
        A SQL expression giving decoder option `option` of the row's feed (column `feed`), as
        declared in cdc_feeds(), for feeds of `feed_format`; `default` otherwise.
    -#}
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
