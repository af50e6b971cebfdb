{% macro cdc_typed_current_state(feed, source_schema, source_table) %}
    {#-
        Body of a typed per-table model (models/marts/tables/<feed>__<schema>__<table>.sql):
        the table's live rows from current_state, one column per catalog column
        (cdc_typed_columns: the YAML `cdc scaffold` writes from seeds/cdc_columns.csv, in ordinal
        order), cast from canonical text to its spark_type,
        plus primary_key, last_change_position and last_committed_at.
    -#}
    {{ cdc_typed_rows(
        'current_state', feed, source_schema, source_table,
        ['primary_key'], ['last_change_position', 'last_committed_at']
    ) }}
{% endmacro %}
