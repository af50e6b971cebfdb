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
