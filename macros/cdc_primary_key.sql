{% macro cdc_primary_key(key_columns, before_image, after_image) %}
    {#- Canonical text of a row's primary key (macros/_macros.yml). -#}
    (case
        when {{ key_columns }} is null or size({{ key_columns }}) = 0 then null
        else to_json(transform(
            {{ key_columns }},
            k -> case
                when {{ after_image }} is not null and map_contains_key({{ after_image }}, k) then {{ after_image }}[k]
                else {{ before_image }}[k]
            end
        ))
    end)
{% endmacro %}
