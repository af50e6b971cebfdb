{% macro cdc_key_columns(changes, catalog_tables) %}
    {#-
        Select-list items giving a change its key from the catalog (DESIGN.md §6.3):
        primary_key (cdc_primary_key of the catalog's key columns), before_primary_key (the key
        of the before image when it carries every key column, else null) and is_in_catalog.
        `changes` and `catalog_tables` are the aliases of a change relation (before_image,
        after_image) left-joined to int_catalog_tables on feed, schema and table. Used where
        changes get their key: int_changes_keyed, and int_changes_logged for changes logged
        before their table was declared.
    -#}
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
