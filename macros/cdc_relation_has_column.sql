{% macro cdc_relation_has_column(relation, column_name) %}
    {#-
        Whether `relation` (an existing table) has the top-level column `column_name`: read from
        the schema tree dbt's relation cache holds for it (`show table extended`, listed when
        dbt starts: no query), else asked with `describe` (adapter.get_columns_in_relation).
    -#}
    {%- set information = relation.information or '' -%}
    {%- if information -%}
        {{ return(('\n |-- ' ~ column_name ~ ':') in information) }}
    {%- endif -%}
    {{ return(column_name in adapter.get_columns_in_relation(relation) | map(attribute='name') | list) }}
{% endmacro %}
