{% macro cdc_logged_without_key(logged, catalog_tables) %}
    {#- A change logged without the key the catalog now gives it (macros/_macros.yml). -#}
    ({{ catalog_tables }}.source_table is not null and (
        not {{ logged }}.is_in_catalog
        or (
            {{ logged }}.primary_key is null
            and {{ logged }}.operation in ('INSERT', 'UPDATE', 'DELETE', 'LOAD')
            and size({{ catalog_tables }}.key_column_names) > 0
        )
    ))
{%- endmacro %}
