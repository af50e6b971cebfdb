{% macro cdc_changed_columns(mask_hex, column_names, first_bit=0, bit_order="'lsb_last_hex'") %}
    {#- The column names whose mask bit is set (macros/_macros.yml). -#}
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
