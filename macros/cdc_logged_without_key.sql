{% macro cdc_logged_without_key(logged, catalog_tables) %}
    {#-
        SQL boolean: a row of int_changes_logged (alias `logged`) was logged without the key the
        catalog now gives it, so the next run logs it again, keyed, and the change_log mart
        leaves it out (ADR 0021). True when the catalog (alias `catalog_tables` of
        int_catalog_tables, left-joined on feed, schema and table) has the table and either the
        row was logged while the table was not in the catalog, or it is a row change
        (INSERT, UPDATE, DELETE, LOAD) logged without a primary key while the table had no key
        columns, and the catalog now names some.
    -#}
    ({{ catalog_tables }}.source_table is not null and (
        not {{ logged }}.is_in_catalog
        or (
            {{ logged }}.primary_key is null
            and {{ logged }}.operation in ('INSERT', 'UPDATE', 'DELETE', 'LOAD')
            and size({{ catalog_tables }}.key_column_names) > 0
        )
    ))
{%- endmacro %}
