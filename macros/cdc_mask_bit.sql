{% macro cdc_mask_bit(mask_hex, bit_index, bit_order="'lsb_last_hex'") %}
    {#- Is one bit of a hex change/column mask set? (macros/_macros.yml). -#}
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
