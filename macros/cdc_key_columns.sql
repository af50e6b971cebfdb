{% macro cdc_key_columns(changes, catalog_tables) %}
    {#- A change's primary_key, before_primary_key and is_in_catalog (macros/_macros.yml). -#}
    {{ cdc_primary_key(catalog_tables ~ '.key_column_names', changes ~ '.before_image', changes ~ '.after_image') }}
        as primary_key,
    case
        when
            {{ changes }}.before_image is not null
            and size({{ catalog_tables }}.key_column_names) > 0
            and forall({{ catalog_tables }}.key_column_names, k -> map_contains_key({{ changes }}.before_image, k))
            then {{ cdc_primary_key(catalog_tables ~ '.key_column_names', changes ~ '.before_image', 'cast(null as map<string, string>)') }}
    end as before_primary_key,
    {{ catalog_tables }}.source_table is not null as is_in_catalog
{%- endmacro %}
