{% macro cdc_primary_key(key_columns, before_image, after_image) %}
    {#-
        Canonical text of a row's primary key: a JSON array of the key values (canonical
        text, JSON null for NULL) in key order, e.g. ["7","2024-01-05"]. Unambiguous for
        composite keys. The after image wins; a key column absent from it is taken from the
        before image (DELETE rows have only a before image). Null when there are no key columns.
    -#}
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
