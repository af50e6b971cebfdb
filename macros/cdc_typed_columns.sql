{% macro cdc_typed_columns(node) %}
    {#- The catalog columns a typed model casts (macros/_macros.yml). -#}
    {%- set columns = [] -%}
    {%- for column in node.columns.values() if column.data_type -%}
        {%- do columns.append({
            'name': column.name,
            'source_column': column.config.meta.get('source_column', column.name),
            'data_type': column.data_type,
        }) -%}
    {%- endfor -%}
    {{ return(columns) }}
{% endmacro %}
